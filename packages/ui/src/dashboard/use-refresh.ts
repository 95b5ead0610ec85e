import { useEffect, useRef, useState } from 'preact/hooks';

export interface Refreshed<T> {
  value: T | null;
  /** Set while a round runs, including the first. */
  busy: boolean;
  /** Starts a round now (when none is running) and restarts the wait after it. */
  refreshNow(): void;
}

/**
 * Runs `load` now and then `everyMs` after each round ends, never two at once, until the
 * component unmounts (the user left the page): then no timer is left and a round still in
 * flight is dropped. Waiting after the round, not on a fixed beat, keeps a slow server from
 * piling up requests.
 */
export function useRefresh<T>(load: () => Promise<T>, everyMs: number, ready: boolean): Refreshed<T> {
  const [value, setValue] = useState<T | null>(null);
  const [busy, setBusy] = useState(false);
  const kick = useRef<() => void>(() => undefined);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    if (!ready) return undefined;
    let live = true;
    let running = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const round = async () => {
      if (!live || running) return;
      clearTimeout(timer);
      running = true;
      setBusy(true);
      try {
        const next = await loadRef.current();
        if (live) setValue(next);
      } finally {
        running = false;
        if (live) {
          setBusy(false);
          timer = setTimeout(() => void round(), everyMs);
        }
      }
    };
    kick.current = () => void round();
    void round();
    return () => {
      live = false;
      clearTimeout(timer);
      kick.current = () => undefined;
    };
  }, [everyMs, ready]);

  return { value, busy, refreshNow: () => kick.current() };
}
