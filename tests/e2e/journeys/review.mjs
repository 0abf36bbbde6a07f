// Journey of the reviewer and the architect on real paired disagreements: llama.cpp on CPU,
// Qwen2.5-Coder-0.5B, f16 KV (B0) against q8_0 KV (Q8, an 8-bit stand-in, not FP8), 72 short items
// with three answers that flip from the KV precision alone (fixtures/disagreements). The three
// pairs are labelled blind with the keyboard, by their sides (keys 1–3: A correct and B wrong,
// B correct and A wrong, both acceptable), each revealed after its label with the label it maps
// to; one is relabelled after the reveal, which is marked unblinded; the recovery plan is
// recorded, the four checks are signed and the decision recorded; then a label is edited with raw
// SQL outside the app, and the app shows the tamper warning and the quality signature it voids.

import { assert, choose, waitUntil } from '../helpers.mjs';
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const STUDY = 'Recorded q8_0 disagreements';
const LABEL_KEYS = [['1', 'a_correct_b_wrong'], ['2', 'b_correct_a_wrong'], ['3', 'both_acceptable']];

/** The label a side label maps to once the sides are revealed ("A = Q8, B = B0": the candidate is A). */
function mapped(side, reveal) {
  const candidateIsA = /A = Q8/.test(reveal);
  if (side === 'a_correct_b_wrong') return candidateIsA ? 'baseline_error' : 'candidate_regression';
  if (side === 'b_correct_a_wrong') return candidateIsA ? 'candidate_regression' : 'baseline_error';
  return side;
}

/** Presses one key as the keyboard does (WebDriver actions), to the focused page. */
async function press(s, key) {
  await s.cmd('POST', '/actions', {
    actions: [{ type: 'key', id: 'keyboard', actions: [{ type: 'keyDown', value: key }, { type: 'keyUp', value: key }] }],
  });
  await s.cmd('DELETE', '/actions');
}

function setValue(s, css, value, event = 'input') {
  return s.script(
    'const el = document.querySelector(arguments[0]);' +
      'el.value = arguments[1];' +
      'el.dispatchEvent(new Event(arguments[2], { bubbles: true }));',
    [css, value, event],
  );
}

function rows(s) {
  return s.script(
    'return [...document.querySelectorAll(\'[data-testid="review-pair-row"]\')].map((r) => ({ id: r.dataset.pairId, label: r.dataset.label ?? "" }));',
  );
}

function checkStates(s) {
  return s.script(
    'return Object.fromEntries([...document.querySelectorAll(\'[data-testid="signoff-check"]\')].map((c) => [c.dataset.check, c.dataset.state]));',
  );
}

export const journeys = [
  {
    name: 'review: label three pairs blind with the keyboard, reveal, sign the four checks, decide; an outside edit is flagged',
    async run(ctx) {
      const db = ctx.db('review');
      ctx.kvgate(['--db', db, 'study', 'create', STUDY]);
      for (const m of ['qwen25-coder-05b-cpu-b0.json', 'qwen25-coder-05b-cpu-q8.json']) {
        ctx.kvgate(['--db', db, 'manifest', 'freeze', '--study', STUDY, resolve(root, 'fixtures/manifests', m)]);
      }
      ctx.kvgate(['--db', db, 'policy', 'lock', '--study', STUDY, '--file', resolve(root, 'fixtures/policies/demo-cpu.json'), '--by', 'owner']);
      for (const [cell, file] of [['B0', 'qwen-b0-f16'], ['Q8', 'qwen-q8-q8_0']]) {
        ctx.kvgate(['--db', db, 'import', '--study', STUDY, '--cell', cell, '--format', 'jsonl',
          resolve(root, 'fixtures/disagreements/runs', `${file}.kvgate-run.jsonl`)]);
      }

      const s = await ctx.launch(['--db', db]);
      await s.waitForTexts('[data-testid="study-row"] [data-testid="study-row-name"]', (t) => t.includes(STUDY));
      await s.click('[data-testid="study-open"]');
      await s.waitForTexts('[data-testid="current-study"]', (t) => t[0] === STUDY);
      await s.click('[data-testid="nav-review"]');
      // The queue is exactly the three real disagreements.
      const listed = await waitUntil(() => rows(s), (r) => r.length === 3, 'the three disagreements listed', 30000);
      const counted = await s.text('[data-testid="review-count-disagreements"]');
      assert(counted.startsWith('Disagreements: 3'), `counted: ${counted}`);
      const items = listed.map((r) => r.id.split('/').pop()).sort();
      assert(
        JSON.stringify(items) ===
          JSON.stringify([
            'evaluation-11-de-short-middle-numeric-present-002',
            'evaluation-11-de-short-middle-numeric-present-003',
            'evaluation-11-en-short-end-literal-present-000',
          ]),
        `the flipped items: ${items}`,
      );
      await s.type('[data-testid="review-reviewer"]', 'reviewer one');
      // Blind before a label: the sides are A and B, nothing names the cells.
      const blind = await s.script('return document.querySelector(\'[data-testid="review-pair"]\')?.textContent ?? "";');
      assert(!/\b[AB] = (B0|Q8)\b/.test(blind) && !(await s.findAll('[data-testid="review-reveal"]')).length, 'no reveal before a label');
      await ctx.screenshot(s, 'review-blind');

      // The field diff shows where the two answers part (a value or a unit).
      const differs = await s.script('return document.querySelectorAll(\'[data-testid="review-diff-row"] [data-differs="true"]\').length;');
      assert(differs >= 1, `a differing field is marked: ${differs}`);

      // Before any label, only the five side labels are offered: none names a role.
      assert(!(await s.findAll('[data-testid="review-label-candidate_regression"]')).length, 'no role label before the reveal');
      // Label the three pairs blind with the keyboard (1, 2, 3 = three side labels), j = next; each
      // reveal shows the sides and the label the side label maps to.
      await s.click('[data-testid="review-list"]');
      const expected = [];
      for (let i = 0; i < 3; i++) {
        const [key, side] = LABEL_KEYS[i];
        // The pair is followed by its id: a list re-read after the write may order rows anew.
        const id = await s.script('return document.querySelector(\'[data-testid="review-pair-row"][aria-current="true"]\')?.dataset.pairId ?? "";');
        assert(id !== '', `a current pair before label ${i + 1}`);
        const labelOf = async () => (await rows(s)).find((r) => r.id === id)?.label ?? 'unlabelled';
        // A label key counts only once the pair is shown: it is read after the move.
        await waitUntil(
          () => s.script('return document.querySelector(\'[data-testid="review-pair"]\')?.dataset.pairId ?? "";'),
          (shown) => shown === id,
          `pair ${i + 1} shown`,
        );
        await press(s, key);
        await waitUntil(labelOf, (l) => l !== 'unlabelled', `pair ${i + 1} labelled ${side}`);
        const reveal = await s.text('[data-testid="review-reveal"]');
        assert(/A = (B0|Q8)/.test(reveal) && /B = (B0|Q8)/.test(reveal), `the reveal names both sides: ${reveal}`);
        const label = await labelOf();
        assert(label === mapped(side, reveal), `${side} with ${reveal} maps to ${mapped(side, reveal)}, stored ${label}`);
        expected.push(label);
        if (i < 2) await press(s, 'j');
      }
      await ctx.screenshot(s, 'review-labelled');
      // A relabel after the reveal (the role labels are offered now): recorded, marked unblinded.
      await s.click('[data-testid="review-label-both_wrong"]');
      await waitUntil(
        () => s.attr('[data-testid="review-current-label"]', 'data-unblinded'),
        (v) => v === 'true',
        'the relabel marked unblinded',
      );
      // The words follow the attribute in a later paint: wait on them, not on a screenshot.
      const status = await waitUntil(
        () => s.text('[data-testid="review-current-label"]'),
        (t) => t.includes('(unblinded)') && t.includes('Both wrong'),
        'the pair says unblinded',
      );
      assert(status.includes('(unblinded)'), `the pair says unblinded: ${status}`);
      expected[2] = 'both_wrong';
      await ctx.screenshot(s, 'review-unblinded');
      const audit = ctx.kvgate(['--db', db, 'audit', 'verify', '--study', STUDY]);
      assert(audit.includes('intact: 4 audit events'), `audit: ${audit}`);
      const queue = JSON.parse(ctx.kvgate(['--db', db, 'review', 'list', '--study', STUDY, '--json']));
      const stored = queue.pairs.map((p) => p.label).sort();
      assert(JSON.stringify(stored) === JSON.stringify([...expected].sort()), `the three labels are stored: ${stored}`);
      assert(queue.pairs.filter((p) => p.unblinded).length === 1, 'one pair unblinded in the CLI too');

      // Sign the four checks, then record the decision.
      await s.click('[data-testid="nav-signoff"]');
      await waitUntil(() => checkStates(s), (st) => Object.keys(st).length === 4, 'the four checks shown', 30000);
      await s.type('[data-testid="signoff-signer"]', 'architect');
      // Recovery cannot be signed before the service owner records the recovery plan.
      await s.waitFor('[data-testid="signoff-recovery-needs-plan"]');
      await s.click('[data-testid="recovery-plan-open"]');
      await s.waitFor('[data-testid="recovery-plan-form"]');
      await s.type('[data-testid="recovery-route"]', 'chat-short (127.0.0.1, demo)');
      await s.type('[data-testid="recovery-share"]', '5');
      await s.type('[data-testid="recovery-breach"]', 'TTFT p99 above the class SLO for 5 minutes: new traffic back to B0');
      await s.type('[data-testid="recovery-drain"]', '600');
      await setValue(s, '[data-testid="recovery-date"]', '2026-11-30');
      for (const step of ['restart', 'cache-loss', 'warm-up']) await choose(s, `[data-testid="recovery-${step}"]`, 'passed');
      await setValue(s, '[data-testid="recovery-by"]', 'owner');
      await waitUntil(() => s.findAll('[data-testid="recovery-problem"]'), (p) => p.length === 0, 'the plan checks clean');
      await s.click('[data-testid="recovery-plan-record"]');
      await s.waitFor('[data-testid="evidence-recovery-plan"]', { timeoutMs: 30000 });
      const shown = await s.attr('[data-testid="evidence-recovery-rehearsal"]', 'data-date');
      assert(shown === '2026-11-30', `the rehearsal date shown: ${shown}`);
      const plan = JSON.parse(ctx.kvgate(['--db', db, 'recovery', 'show', '--study', STUDY, '--json']));
      assert(plan.current?.plan.canary.share_percent === 5 && plan.current.recorded_by === 'owner', `plan stored: ${JSON.stringify(plan.current)}`);
      for (const check of ['compatibility', 'quality', 'operations', 'recovery']) {
        // A check whose evidence shows a failure (a protected floor failed) takes a stated reason.
        const reason = `[data-testid="signoff-check"][data-check="${check}"] [data-testid="signoff-reason"]`;
        if ((await s.findAll(reason)).length) await s.type(reason, 'three flips recorded; signed to record the decision');
        await s.click(`[data-testid="signoff-check"][data-check="${check}"] [data-testid="signoff-sign"]`);
        await waitUntil(() => checkStates(s), (st) => st[check] === 'signed', `${check} signed`, 30000);
      }
      await s.click('[data-testid="decision-card"][data-candidate="Q8"] [data-testid="decision-outcome-retain"]');
      await s.type('[data-testid="decision-card"][data-candidate="Q8"] [data-testid="decision-rationale"]', 'three flips in 72 items: too few pairs to call the change acceptable');
      await s.click('[data-testid="decision-card"][data-candidate="Q8"] [data-testid="decision-record"]');
      await waitUntil(() => s.findAll('[data-testid="decision-row"]'), (r) => r.length === 1, 'the decision listed');
      await ctx.screenshot(s, 'signoff-decided');
      const verified = ctx.kvgate(['--db', db, 'audit', 'verify', '--study', STUDY]);
      assert(verified.includes('intact: 9 audit events'), `audit after sign-off: ${verified}`);

      // A label edited outside the app: the review screen flags it, the quality signature is void.
      const edited = listed[1].id;
      execFileSync('sqlite3', [db, `UPDATE adjudications SET label = 'both_wrong' WHERE pair_id = '${edited}'`]);
      await s.click('[data-testid="nav-review"]');
      await s.waitFor('[data-testid="review-tamper"]', { timeoutMs: 30000 });
      const warning = await s.text('[data-testid="review-tamper"]');
      assert(warning.includes(edited), `the warning names the pair: ${warning}`);
      await ctx.screenshot(s, 'review-tamper');
      await s.click('[data-testid="nav-signoff"]');
      await waitUntil(() => checkStates(s), (st) => st.quality === 'void' && st.compatibility === 'signed', 'the quality signature void', 30000);
      await s.close();
    },
  },
];
