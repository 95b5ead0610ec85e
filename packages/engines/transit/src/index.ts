export { TransitBackend, createTransitBackend, transitEngine } from './transit-engine';
