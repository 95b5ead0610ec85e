// One Jest run for the whole monorepo. Sources are transformed by sucrase (no type-check here:
// `npm test` runs `tsc -b` first), and workspace imports resolve to TypeScript sources so that
// a test never runs against a stale build.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages'],
  testMatch: ['**/src/**/*.test.ts', '**/packages/ui/e2e/**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@sucrase/jest-plugin', { disableESTransforms: true }] },
  moduleNameMapper: {
    '^@strongroom/base$': '<rootDir>/packages/base/src/index.ts',
    '^@strongroom/core$': '<rootDir>/packages/core/src/index.ts',
    '^@strongroom/cluster$': '<rootDir>/packages/cluster/src/index.ts',
    '^@strongroom/raft$': '<rootDir>/packages/raft/src/index.ts',
    '^@strongroom/engine-kv$': '<rootDir>/packages/engines/kv/src/index.ts',
    '^@strongroom/engine-transit$': '<rootDir>/packages/engines/transit/src/index.ts',
    '^@strongroom/cloud1-client$': '<rootDir>/packages/cloud1-client/src/index.ts',
    '^@strongroom/engine-cloud1-auth$': '<rootDir>/packages/engines/cloud1-auth/src/index.ts',
    '^@strongroom/engine-cloud1-secrets$': '<rootDir>/packages/engines/cloud1-secrets/src/index.ts',
    '^@strongroom/api$': '<rootDir>/packages/api/src/index.ts',
    '^@strongroom/cli$': '<rootDir>/packages/cli/src/index.ts',
    '^@strongroom/emulators$': '<rootDir>/packages/emulators/src/index.ts',
    '^@strongroom/snapshots$': '<rootDir>/packages/snapshots/src/index.ts',
    '^@strongroom/sync$': '<rootDir>/packages/sync/src/index.ts',
    '^@strongroom/replication$': '<rootDir>/packages/replication/src/index.ts',
  },
  setupFiles: ['<rootDir>/jest.setup.js'],
  testTimeout: 30000,
};
