// Journey of the architect saving charts from the Results screen on the recorded llama.cpp runs
// (f16 KV = B0, q8_0 KV = Q8): Export SVG… and Export PNG… go through the save dialog, whose
// answer alone is given (KVGATE_E2E_SAVE_DIR: the suggested name in a test folder). The app
// writes the files; the journey reads them back: the SVG is the very chart shown, the PNG is a
// PNG at twice the chart's size titled with the chart's title.

import { assert, waitUntil, recordedStudy } from '../helpers.mjs';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const STUDY = 'Recorded q8_0 charts';

/** A PNG's size and its iTXt/tEXt text chunks, read from its bytes. */
function readPng(bytes) {
  assert(bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'the PNG signature');
  const text = {};
  let width = 0;
  let height = 0;
  for (let at = 8; at < bytes.length; ) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    const data = bytes.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
    } else if (type === 'tEXt') {
      const nul = data.indexOf(0);
      text[data.toString('latin1', 0, nul)] = data.toString('latin1', nul + 1);
    } else if (type === 'iTXt') {
      // keyword \0 compression-flag method language \0 translated-keyword \0 text (uncompressed here)
      const nul = data.indexOf(0);
      assert(data[nul + 1] === 0, 'an uncompressed iTXt chunk');
      const lang = data.indexOf(0, nul + 3);
      const translated = data.indexOf(0, lang + 1);
      text[data.toString('latin1', 0, nul)] = data.toString('utf8', translated + 1);
    }
    at += 12 + length;
  }
  return { width, height, text };
}

/** The SVG text an `<img>` of the Results screen shows (its data: URL decoded). */
function shownSvg(s, testid) {
  return s.script(
    'const src = document.querySelector(`[data-testid="${arguments[0]}"]`).getAttribute("src");' +
      'return decodeURIComponent(src.slice(src.indexOf(",") + 1));',
    [testid],
  );
}

export const journeys = [
  {
    name: 'chart export: Export SVG… and PNG… write the chart shown through the save dialog, Show in folder offered',
    async run(ctx) {
      const db = ctx.db('chart-export');
      recordedStudy(ctx, db, STUDY, { lock: true });

      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(STUDY));
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === STUDY);
      await s.click('[data-testid="nav-results"]');
      await s.waitFor('[data-testid="chart-goodput-image"]', { timeoutMs: 60000 });

      // SVG: the file written is the chart shown, byte for byte.
      await s.click('[data-testid="chart-goodput-export-svg"]');
      await s.waitFor('[data-testid="chart-goodput-saved"]', { timeoutMs: 30000 });
      const svgPath = (await s.text('[data-testid="chart-goodput-saved-path"]')).trim();
      assert(svgPath === join(ctx.saved, 'recorded-q8-0-charts_goodput.svg'), `saved under the suggested name: ${svgPath}`);
      const svg = readFileSync(svgPath, 'utf8');
      assert(svg === (await shownSvg(s, 'chart-goodput-image')), 'the saved SVG is the SVG shown');
      const title = await s.attr('[data-testid="chart-goodput-image"]', 'alt');
      assert(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'), 'a standalone SVG document');
      assert(svg.includes(`<title>${title}</title>`), `titled "${title}"`);
      assert((await s.findAll('[data-testid="chart-goodput-saved-show"]')).length === 1, 'Show in folder offered');

      // PNG: drawn by the app at twice the chart's size, with the chart's title in the file.
      const forest = await s.script('return document.querySelector(\'[data-testid^="chart-forest-"][data-testid$="-image"]\').dataset.testid;');
      const id = forest.replace(/^chart-/, '').replace(/-image$/, '');
      await s.click(`[data-testid="chart-${id}-export-png"]`);
      await s.waitFor(`[data-testid="chart-${id}-saved"]`, { timeoutMs: 30000 });
      const pngPath = (await s.text(`[data-testid="chart-${id}-saved-path"]`)).trim();
      assert(pngPath.startsWith(ctx.saved) && pngPath.endsWith('.png'), `a PNG saved: ${pngPath}`);
      const png = readPng(readFileSync(pngPath));
      const forestTitle = await s.attr(`[data-testid="${forest}"]`, 'alt');
      assert(png.text.Title === forestTitle, `PNG titled "${forestTitle}": ${JSON.stringify(png.text.Title)}`);
      // The chart's own size (the attributes), not the size it is drawn at in the window.
      const [width, height] = await s.script(
        'const img = document.querySelector(`[data-testid="${arguments[0]}"]`);' +
          'return [Number(img.getAttribute("width")), Number(img.getAttribute("height"))];',
        [forest],
      );
      assert(png.width === 2 * width && png.height === 2 * height, `twice the chart's size: ${png.width}×${png.height} for ${width}×${height}`);
      assert((png.text.Description ?? '').length > 0, 'the chart described in the PNG');

      await s.script('document.querySelector(`[data-testid="chart-goodput"]`).scrollIntoView({ block: "start" });');
      await waitUntil(() => s.findAll('[data-testid="chart-goodput-saved"]'), (n) => n.length === 1, 'the saved notice still shown');
      await ctx.screenshot(s, 'results-chart-exported');
      await s.close();
    },
  },
];
