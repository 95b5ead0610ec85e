export { LevelStorage } from './level-storage';
