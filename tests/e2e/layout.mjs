// What "fits the window" means, checked in the page over WebDriver. At the window's width (the
// journeys run at 1280×800):
//
// 1. The page never scrolls sideways: `document.documentElement.scrollWidth <= innerWidth`, and the
//    screen region `main` (which scrolls vertically) has `scrollWidth <= clientWidth`.
// 2. No rendered element (a box wider and taller than 0, not `visibility: hidden`) ends right of
//    the window, unless it lies inside an *intentional horizontal scroller*: an element below
//    `main` whose computed `overflow-x` is `auto` or `scroll` (it shows a scrollbar, the user can
//    reach what it holds), which itself ends inside the window (rule 2 applies to it too).
// 3. No element cuts its own content sideways (`scrollWidth > clientWidth`), whether the content
//    spills over its neighbours (`overflow: visible`) or is clipped (`hidden`, `clip`), with three
//    exceptions, each on purpose: an intentional scroller (rule 2); a text field the user types
//    into (an enabled, writable `input` or `textarea` scrolls its own text under the caret); and
//    assistive text hidden on purpose (`.visually-hidden`, clipped to 1 px). A `select` showing a
//    cut choice, a read-only or disabled field showing a cut value, a table or a grid header wider
//    than its column: each is a failure.
// One pixel of rounding is allowed everywhere. Closed <details> are opened first: what a click
// shows must fit too.

/** Runs in the page; returns { problems: string[], scrollers: string[] } (scrollers that scroll). */
const PROBE = `
const vw = window.innerWidth;
const main = document.getElementById('main');
const problems = [];
const scrolling = [];
const name = (el) => {
  const id = el.dataset && el.dataset.testid ? '[data-testid=' + el.dataset.testid + ']' : el.id ? '#' + el.id : '';
  const cls = typeof el.className === 'string' && el.className.trim() ? '.' + el.className.trim().split(/\\s+/).filter((c) => !c.startsWith('svelte-')).join('.') : '';
  const text = (el.textContent || el.value || '').trim().replace(/\\s+/g, ' ').slice(0, 40);
  return el.tagName.toLowerCase() + id + cls + (text ? ' "' + text + '"' : '');
};
const isScroller = (el) => el !== main && el !== document.documentElement && el !== document.body &&
  ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
const isTypedInto = (el) => (el.tagName === 'TEXTAREA' ||
  (el.tagName === 'INPUT' && !['checkbox', 'radio', 'button', 'submit', 'reset', 'file', 'range', 'color'].includes(el.type))) &&
  !el.disabled && !el.readOnly;
const hiddenOnPurpose = (el) => !!el.closest('.visually-hidden');
if (document.documentElement.scrollWidth > vw + 1) problems.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' px in a ' + vw + ' px window');
if (main && main.scrollWidth > main.clientWidth + 1) problems.push('the screen scrolls sideways: ' + main.scrollWidth + ' px in ' + main.clientWidth + ' px');
for (const el of document.querySelectorAll('body *')) {
  const style = getComputedStyle(el);
  if (style.visibility === 'hidden' || style.display === 'none' || hiddenOnPurpose(el)) continue;
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) continue;
  let inScroller = false;
  for (let p = el.parentElement; p && p !== main && p !== document.body; p = p.parentElement) {
    if (isScroller(p)) { inScroller = true; break; }
  }
  if (r.right > vw + 1 && !inScroller) problems.push(name(el) + ' ends at ' + Math.round(r.right) + ' px, right of the ' + vw + ' px window');
  if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
    if (isScroller(el)) scrolling.push(name(el) + ': ' + el.scrollWidth + ' px in ' + el.clientWidth + ' px');
    else if (!isTypedInto(el) && el !== main) problems.push(name(el) + ' cuts its content: ' + el.scrollWidth + ' px in ' + el.clientWidth + ' px');
  }
}
return { problems, scrolling };
`;

/** Opens every closed <details> (what a click shows must fit too). */
export function openDetails(s) {
  return s.script('for (const d of document.querySelectorAll("details:not([open])")) d.open = true; return true;');
}

/** The layout problems of the window as it is now (rules above), after two paints. */
export async function layoutProblems(s) {
  await s.cmd('POST', '/execute/async', {
    script: 'const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done()));',
    args: [],
  });
  return s.script(PROBE);
}
