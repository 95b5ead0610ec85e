import { HASH_BYTES } from './layout';

/**
 * The composite root as it was before each of the last `capacity` changes that touched the tree,
 * in a ring (two flat arrays rather than a map of Buffers: 16384 entries by default).
 * A change that touched nothing leaves the root alone, so the root before any index above
 * `floor` is the one recorded at the next recorded index, or the current root past the last.
 */
export class RootHistory {
  private readonly indexes: Float64Array;
  private readonly roots: Buffer;
  private start = 0;
  private size = 0;
  /** The highest index whose root left the ring (or the index the history began at). */
  private floorIndex: number;

  constructor(readonly capacity: number, floor: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('history length must be a positive integer');
    this.indexes = new Float64Array(capacity);
    this.roots = Buffer.alloc(capacity * HASH_BYTES);
    this.floorIndex = floor;
  }

  get floor(): number {
    return this.floorIndex;
  }

  /** Records the root before `index`; indexes come in increasing order. */
  record(index: number, root: Buffer): void {
    if (this.size === this.capacity) {
      this.floorIndex = this.indexes[this.start] as number;
      this.start = (this.start + 1) % this.capacity;
      this.size--;
    }
    const slot = (this.start + this.size) % this.capacity;
    this.indexes[slot] = index;
    this.roots.set(root, slot * HASH_BYTES);
    this.size++;
  }

  /**
   * The root before `index` if known: the recorded root of the first recorded index at or after
   * it; `undefined` at or below the floor, or past the last recorded (the caller knows the root then).
   */
  lookup(index: number): Buffer | undefined {
    if (index <= this.floorIndex || this.size === 0) return undefined;
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.indexes[(this.start + mid) % this.capacity] as number) < index) lo = mid + 1;
      else hi = mid;
    }
    if (lo === this.size) return undefined;
    const slot = (this.start + lo) % this.capacity;
    return Buffer.from(this.roots.subarray(slot * HASH_BYTES, (slot + 1) * HASH_BYTES));
  }

  /** Recorded entries with an index above `after`, oldest first. */
  since(after: number): Array<[number, Buffer]> {
    const out: Array<[number, Buffer]> = [];
    for (let i = this.size - 1; i >= 0; i--) {
      const slot = (this.start + i) % this.capacity;
      const index = this.indexes[slot] as number;
      if (index <= after) break;
      out.push([index, Buffer.from(this.roots.subarray(slot * HASH_BYTES, (slot + 1) * HASH_BYTES))]);
    }
    return out.reverse();
  }

  /** The oldest index still recorded, if any. */
  get oldest(): number | undefined {
    return this.size === 0 ? undefined : this.indexes[this.start];
  }
}
