import { HEAP_GROWING_PERCENT, limitHeapGrowth } from './heap-growth';

describe('the server\'s heap growth', () => {
  it('is set to collect at 1.5 times the live heap, unless node was given its own', () => {
    const set: string[] = [];
    expect(limitHeapGrowth(['--enable-source-maps'], (flags) => set.push(flags))).toBe(true);
    expect(set).toEqual([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`]);
    expect(HEAP_GROWING_PERCENT).toBe(50);
    expect(limitHeapGrowth(['--heap-growing-percent=200'], (flags) => set.push(flags))).toBe(false);
    expect(limitHeapGrowth(['--heap_growing_percent', '80'], (flags) => set.push(flags))).toBe(false);
    expect(set).toHaveLength(1);
  });
});
