import { useEffect, useRef } from 'react';

/**
 * Keeps `--sticky-top` on <html> at the height of the element the ref is on (the top bar with the host-down
 * banner), so that a field scrolled into view (focus, an error) stops below it at every width and with the
 * banner shown or not. styles.css turns it into `scroll-padding-top`.
 */
export function useStickyHeight<T extends HTMLElement = HTMLDivElement>() {
  const ref = useRef<T>(null);
  useEffect(() => {
    const element = ref.current;
    if (!element || typeof ResizeObserver !== 'function') return;
    const root = document.documentElement;
    const observer = new ResizeObserver(() => {
      root.style.setProperty('--sticky-top', `${Math.ceil(element.getBoundingClientRect().height)}px`);
    });
    observer.observe(element);
    return () => {
      observer.disconnect();
      root.style.removeProperty('--sticky-top');
    };
  }, []);
  return ref;
}
