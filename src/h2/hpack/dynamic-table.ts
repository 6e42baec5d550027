/**
 * HPACK's dynamic table (RFC 7541 §2.3.2, §4): newest entry first, each entry sized name + value + 32 octets,
 * oldest entries evicted to fit. Kept in a ring so insertion and eviction are O(1).
 */
import type { HeaderField } from '../header-block.js';

/** The per-entry overhead RFC 7541 §4.1 adds to an entry's name and value. */
export const ENTRY_OVERHEAD = 32;

/** Ring slots before the first growth; a power of two (the ring indexes with a mask). */
const INITIAL_SLOTS = 16;

export function entrySize(name: string, value: string): number {
  return name.length + value.length + ENTRY_OVERHEAD;
}

export class DynamicTable {
  private ring: (HeaderField | undefined)[] = new Array<HeaderField | undefined>(INITIAL_SLOTS);
  /** Slot of the newest entry. */
  private head = 0;
  private count = 0;
  private octets = 0;

  constructor(private capacity: number) {}

  /** Entries in the table. */
  get length(): number {
    return this.count;
  }

  /** The table's size as §4.1 counts it. */
  get size(): number {
    return this.octets;
  }

  get maxSize(): number {
    return this.capacity;
  }

  /** Entry `i`, 0 being the newest; undefined past the end. */
  get(i: number): HeaderField | undefined {
    return i < this.count ? this.ring[(this.head + i) & (this.ring.length - 1)] : undefined;
  }

  /** Inserts a field, evicting the oldest entries until it fits; an entry larger than the table empties it (§4.4). */
  add(field: HeaderField): void {
    const size = entrySize(field[0], field[1]);
    this.evictTo(this.capacity - size);
    if (size > this.capacity) return;
    if (this.count === this.ring.length) this.grow();
    this.head = (this.head - 1) & (this.ring.length - 1);
    this.ring[this.head] = field;
    this.count++;
    this.octets += size;
  }

  /** Applies a dynamic table size update (§4.3): evicts until the table fits the new size. */
  setMaxSize(size: number): void {
    this.capacity = size;
    this.evictTo(size);
  }

  private evictTo(size: number): void {
    while (this.count > 0 && this.octets > size) {
      const slot = (this.head + this.count - 1) & (this.ring.length - 1);
      const [name, value] = this.ring[slot]!;
      this.ring[slot] = undefined;
      this.count--;
      this.octets -= entrySize(name, value);
    }
  }

  private grow(): void {
    const ring = new Array<HeaderField | undefined>(this.ring.length * 2);
    for (let i = 0; i < this.count; i++) ring[i] = this.get(i);
    this.ring = ring;
    this.head = 0;
  }
}
