/** A binary min-heap keyed by number, for "what is due next" across many schedules. */
export class MinHeap<T> {
  private readonly items: { key: number; value: T }[] = [];

  get size(): number {
    return this.items.length;
  }

  push(key: number, value: T): void {
    const items = this.items;
    items.push({ key, value });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((items[parent] as { key: number }).key <= key) break;
      [items[i], items[parent]] = [items[parent] as { key: number; value: T }, items[i] as { key: number; value: T }];
      i = parent;
    }
  }

  peek(): { key: number; value: T } | undefined {
    return this.items[0];
  }

  pop(): { key: number; value: T } | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let smallest = i;
        if (l < items.length && (items[l] as { key: number }).key < (items[smallest] as { key: number }).key) smallest = l;
        if (r < items.length && (items[r] as { key: number }).key < (items[smallest] as { key: number }).key) smallest = r;
        if (smallest === i) break;
        [items[i], items[smallest]] = [items[smallest] as { key: number; value: T }, items[i] as { key: number; value: T }];
        i = smallest;
      }
    }
    return top;
  }

  clear(): void {
    this.items.length = 0;
  }
}
