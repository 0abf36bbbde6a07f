import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Study } from '$lib/bindings/Study';
import type { AuditReport } from '$lib/bindings/AuditReport';
import type { ReviewQueue } from '$lib/bindings/ReviewQueue';
import type { ReviewIndex } from '$lib/bindings/ReviewIndex';

vi.mock('$lib/ipc', async (importOriginal) => ({
  ...(await importOriginal<typeof import('$lib/ipc')>()),
  reviewQueue: vi.fn(),
  reviewIndex: vi.fn(),
  reviewPair: vi.fn(),
  labelPair: vi.fn(),
  verifyAudit: vi.fn(),
}));

import * as ipc from '$lib/ipc';
import { Workspace } from '$lib/workspace.svelte';
import ReviewScreen from './ReviewScreen.svelte';
import { ReviewModel, VERIFY_AFTER_LABEL_MS } from './review.svelte';
import type { Pair } from './review-view';

const ipcMock = vi.mocked(ipc);
const study: Study = { id: 7, name: 'FP8 KV demo', description: '', provenance: 'synthetic_demo', created_at: '2026-03-03T08:00:00Z' };
const ITEM = 'eval-42-de-long-end-numeric-present-003';
const XSS = '<img src=x onerror=alert(1)>';

function side(accepted: boolean, torque: string, text: string): Pair['a'] {
  return {
    output_text: text,
    status: 'ok',
    accepted,
    verdict: {
      accepted,
      reasons: accepted ? [] : ['factor_of_ten'],
      fenced: false,
      extracted: [
        { key: 'asset', kind: 'string', json: '"PX-12"' },
        { key: 'revision', kind: 'string', json: '"C"' },
        { key: 'nominal_torque', kind: 'number', json: torque },
        { key: 'unit', kind: 'string', json: '"N·m"' },
      ],
      detail: accepted
        ? []
        : [{ reason: 'factor_of_ten', field: 'nominal_torque', expected: '12.5', found: torque, text: 'off by a factor of ten' }],
    },
    ttft_ms: accepted ? 81.5 : null,
    e2e_ms: 412,
    completion_tokens: null,
    run_id: accepted ? 1 : 2,
  };
}

function pair(n: number, over: Partial<Pair> = {}): Pair {
  return {
    pair_id: `7:Q8/${ITEM.slice(0, -3)}${String(n).padStart(3, '0')}`,
    candidate: 'Q8',
    item_id: ITEM,
    strata: { language: 'de', length_class: 'long', position: 'end', task_type: 'numeric', answer_kind: 'present' },
    disagreement: true,
    a: side(true, '12.50', '{"asset":"PX-12","revision":"C","nominal_torque":12.50,"unit":"N·m"}'),
    b: side(false, '125', XSS),
    item: {
      id: ITEM,
      synthetic: true,
      split: 'evaluation',
      language: 'de',
      length_class: 'long',
      token_count: 9000,
      position: 'end',
      task_type: 'numeric',
      answer_kind: 'present',
      asked_asset: 'PX-12',
      messages: [
        { role: 'system', content: 'Answer with JSON.' },
        { role: 'user', content: 'Records:\nPX-12 rev C torque 12.5 N·m\nPX-21 rev C torque 125 N·m\nWhat is the torque of PX-12?' },
      ],
      prompt_text: '',
      expected: { asset: 'PX-12', revision: 'C', nominal_torque: 12.5, unit: 'N·m' },
      evidence: ['PX-12 rev C torque 12.5 N·m'],
      distractors: [{ kinds: ['similar_identifier', 'factor_of_ten'], text: 'PX-21 rev C torque 125 N·m' }],
    },
    item_note: null,
    label: null,
    note: null,
    candidate_is_a: null,
    unblinded: false,
    ...over,
  };
}

function queue(pairs: Pair[], over: Partial<ReviewQueue> = {}): ReviewQueue {
  return { study_id: 7, seed: 'seed-1', pairs, disagreements: { C1: 0, Q8: pairs.length }, disagreements_total: pairs.length, labelled: 0, ...over };
}

const intact: AuditReport = { study_id: 7, events: 0, intact: true, chain_break: null, tampered: [] };

/** The backend's rows of a queue: each pair without its answers, item and prompt. */
function rows(q: ReviewQueue): ReviewIndex {
  const { pairs, ...rest } = q;
  return {
    ...rest,
    rows: pairs.map((p) => ({
      pair_id: p.pair_id,
      candidate: p.candidate,
      item_id: p.item_id,
      strata: p.strata,
      disagreement: p.disagreement,
      label: p.label,
      note: p.note,
      candidate_is_a: p.candidate_is_a,
      unblinded: p.unblinded,
    })),
  };
}

/** The tests give the whole queue (`reviewQueue`); the screen reads its rows and each pair alone,
 * from the queue the backend last gave. */
let served: ReviewQueue | null = null;
function serveFromQueue() {
  served = null;
  ipcMock.reviewIndex.mockImplementation(async (studyId, filter) => {
    const q = await ipcMock.reviewQueue(studyId, filter);
    served = q;
    return rows(q);
  });
  ipcMock.reviewPair.mockImplementation(async (id) => {
    const p = served?.pairs.find((x) => x.pair_id === id);
    if (!p) throw { code: 'not_found', message: `pair ${id} not found` };
    return p;
  });
}

function setup() {
  const workspace = new Workspace();
  workspace.current = study;
  workspace.studiesState = 'ready';
  const review = new ReviewModel();
  render(ReviewScreen, { workspace, review });
  return { review };
}

beforeEach(() => {
  vi.resetAllMocks();
  localStorage.clear();
  ipcMock.verifyAudit.mockResolvedValue(intact);
  serveFromQueue();
});

describe('Review screen', () => {
  it('shows the pair blind: sides A and B, no cell name on a side, output as text', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1), pair(2)]));
    setup();
    const a = await screen.findByTestId('review-side-a');
    const b = screen.getByTestId('review-side-b');
    expect(ipcMock.reviewQueue).toHaveBeenCalledWith(7, { candidate: null, strata: {}, reason: null, agreeing_sample: 0 });
    expect(ipcMock.verifyAudit).toHaveBeenCalledWith(7);
    for (const s of [a, b]) {
      expect(s.textContent).not.toContain('Q8');
      expect(s.textContent).not.toContain('B0');
    }
    expect(screen.queryByTestId('review-reveal')).toBeNull();
    // The markup in an output is shown as text, never parsed.
    expect(within(b).getByTestId('review-side-output').textContent).toBe(XSS);
    expect(b.querySelector('img')).toBeNull();
    expect(document.querySelector('img')).toBeNull();
    expect(within(b).getByTestId('review-side-verdict').textContent?.trim()).toBe('rejected');
    expect(within(b).getByTestId('review-side-reasons').textContent).toContain('off by a factor of ten');
    expect(within(b).getByTestId('review-side-ttft').textContent).toBe('absent');
    expect(within(a).getByTestId('review-side-ttft').textContent).toBe('81.5 ms');
    expect(within(a).getByTestId('review-side-tokens').textContent).toBe('absent');

    const torque = within(screen.getByTestId('review-diff'))
      .getAllByTestId('review-diff-row')
      .find((r) => r.dataset['key'] === 'nominal_torque')!;
    const cells = torque.querySelectorAll('td');
    expect([...cells].map((c) => c.textContent)).toEqual(['12.5', '12.50', '125']);
    expect([...cells].map((c) => c.dataset['differs'])).toEqual([undefined, 'false', 'true']);

    expect(screen.getByTestId('review-evidence').textContent).toBe('PX-12 rev C torque 12.5 N·m');
    expect(screen.getByTestId('review-distractor').textContent).toBe('PX-21 rev C torque 125 N·m');
    expect(screen.getByTestId('review-count-disagreements').textContent?.replace(/\s+/g, ' ')).toContain('Q8: 2');
    expect(screen.getByTestId('review-count-disagreements').textContent?.replace(/\s+/g, ' ')).toContain('C1: 0');
    // The count and the per-candidate counts are apart: "2 (C1: 0, Q8: 2)".
    expect(screen.getByTestId('review-count-disagreements').textContent?.replace(/\s+/g, ' ')).toMatch(/: 2 \(C1: 0, Q8: 2\)/);

    const rows = screen.getAllByTestId('review-pair-row');
    expect(rows.map((r) => r.dataset['label'])).toEqual(['unlabelled', 'unlabelled']);
    expect(rows[0]!.getAttribute('aria-current')).toBe('true');
  });

  it('labels with a key, then reveals the sides and updates the row; the chain is verified again', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1), pair(2)]));
    const p = pair(1);
    ipcMock.labelPair.mockResolvedValue({
      event: { seq: 1, at: '2026-03-03T09:00:00Z', actor: 'Ana', kind: 'label', subject: p.pair_id, payload: {}, previous: null, prev_hash: '0', hash: '1' },
      candidate_is_a: false,
      candidate: 'Q8',
      given: 'a_correct_b_wrong',
      label: 'candidate_regression',
      unblinded: false,
    });
    setup();
    await screen.findByTestId('review-side-a');
    // r does nothing before a label.
    await fireEvent.keyDown(window, { key: 'r' });
    expect(screen.queryByTestId('review-reveal')).toBeNull();

    const reviewer = screen.getByTestId('review-reviewer') as HTMLInputElement;
    await fireEvent.input(reviewer, { target: { value: 'Ana' } });
    expect(localStorage.getItem('kvgate.reviewer')).toBe('Ana');
    const note = screen.getByTestId('review-note') as HTMLTextAreaElement;
    await fireEvent.input(note, { target: { value: 'B wrote 125' } });
    // Before a label only the five side labels are offered: none names a role.
    expect(screen.queryByTestId('review-label-candidate_regression')).toBeNull();
    // Typing a digit in the note does not label.
    await fireEvent.keyDown(note, { key: '1' });
    expect(ipcMock.labelPair).not.toHaveBeenCalled();

    await fireEvent.keyDown(window, { key: '1' });
    await waitFor(() => expect(screen.getByTestId('review-reveal').textContent).toBe('A = B0, B = Q8'));
    // Key 1 labels the sides blind; the row shows the label the backend mapped it to.
    expect(ipcMock.labelPair).toHaveBeenCalledWith({ pair_id: p.pair_id, label: 'a_correct_b_wrong', note: 'B wrote 125', by: 'Ana' });
    const row = screen.getAllByTestId('review-pair-row').find((r) => r.dataset['pairId'] === p.pair_id)!;
    expect(row.dataset['label']).toBe('candidate_regression');
    expect(screen.getByTestId('review-count-labelled').textContent).toBe('labelled: 1');
    // Revealed: the role labels are offered for a relabel, the mapped one pressed.
    expect(screen.getByTestId('review-label-candidate_regression').getAttribute('aria-pressed')).toBe('true');
    expect(screen.getByTestId('review-current-label').dataset['unblinded']).toBe('false');
    // The chain is verified again after the label, not beside the reveal's drawing.
    expect(ipcMock.verifyAudit).toHaveBeenCalledTimes(1);
    await waitFor(() => expect(ipcMock.verifyAudit).toHaveBeenCalledTimes(2), { timeout: 3 * VERIFY_AFTER_LABEL_MS });

    // j moves to the next pair, which is blind again.
    await fireEvent.keyDown(window, { key: 'j' });
    expect(screen.getAllByTestId('review-pair-row')[1]!.getAttribute('aria-current')).toBe('true');
    expect(screen.queryByTestId('review-reveal')).toBeNull();
    expect((screen.getByTestId('review-note') as HTMLTextAreaElement).value).toBe('');
    await fireEvent.keyDown(window, { key: 'k' });
    expect(screen.getByTestId('review-reveal').textContent).toBe('A = B0, B = Q8');
  });

  it('a label given in the blind list is what a later order and search read', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1), pair(2), pair(3)]));
    ipcMock.labelPair.mockResolvedValue({
      event: { seq: 1, at: '2026-03-03T09:00:00Z', actor: 'Ana', kind: 'label', subject: pair(1).pair_id, payload: {}, previous: null, prev_hash: '0', hash: '1' },
      candidate_is_a: true,
      candidate: 'Q8',
      given: 'both_wrong',
      label: 'both_wrong',
      unblinded: false,
    });
    const { review } = setup();
    await screen.findByTestId('review-side-a');
    const listed = () => screen.getAllByTestId('review-pair-row').map((r) => r.dataset['pairId']!.slice(-3));
    review.setReviewer('Ana');
    // The first pair, labelled where it is in the blind order.
    expect(await review.label('both_wrong')).toBe(true);
    expect(listed()).toEqual(['001', '002', '003']);
    expect(screen.getAllByTestId('review-pair-row')[0]!.dataset['label']).toBe('both_wrong');
    expect(screen.getByTestId('review-count-labelled').textContent).toBe('labelled: 1');
    await fireEvent.change(screen.getByTestId('review-order'), { target: { value: 'unlabelled' } });
    expect(listed()).toEqual(['002', '003', '001']);
    expect(review.current?.pair_id.slice(-3)).toBe('001');
    await fireEvent.change(screen.getByTestId('review-order'), { target: { value: 'blind' } });
    await fireEvent.input(screen.getByTestId('review-search'), { target: { value: 'unlabelled' } });
    expect(listed()).toEqual(['002', '003']);
  });

  it('keeps a label when a queue read started before it lands after it', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1), pair(2)]));
    const p = pair(1);
    ipcMock.labelPair.mockResolvedValue({
      event: { seq: 1, at: '2026-03-03T09:00:00Z', actor: 'Ana', kind: 'label', subject: p.pair_id, payload: {}, previous: null, prev_hash: '0', hash: '1' },
      candidate_is_a: false,
      candidate: 'Q8',
      given: 'a_correct_b_wrong',
      label: 'candidate_regression',
      unblinded: false,
    });
    const { review } = setup();
    await screen.findByTestId('review-side-a');
    await fireEvent.input(screen.getByTestId('review-reviewer'), { target: { value: 'Ana' } });
    // A re-read (the file watch, F5) is in flight with the queue as it was before the label.
    let land: (q: ReturnType<typeof queue>) => void = () => {};
    ipcMock.reviewQueue.mockReturnValueOnce(new Promise((resolve) => (land = resolve)));
    const stale = review.load();
    await fireEvent.keyDown(window, { key: '1' });
    await waitFor(() => expect(screen.getByTestId('review-reveal').textContent).toBe('A = B0, B = Q8'));
    land(queue([pair(1), pair(2)]));
    await stale;
    const row = screen.getAllByTestId('review-pair-row').find((r) => r.dataset['pairId'] === p.pair_id)!;
    expect(row.dataset['label']).toBe('candidate_regression');
    expect(screen.getByTestId('review-reveal').textContent).toBe('A = B0, B = Q8');
  });

  it('asks for the reviewer name before labelling', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1)]));
    setup();
    await screen.findByTestId('review-side-a');
    await fireEvent.click(screen.getByTestId('review-label-both_wrong'));
    expect(ipcMock.labelPair).not.toHaveBeenCalled();
    expect(screen.getByTestId('review-label-error').textContent).toContain('reviewer');
  });

  it('reveals an already labelled pair only on request', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1, { label: 'both_acceptable', note: 'fine', candidate_is_a: true })], { labelled: 1 }));
    setup();
    await screen.findByTestId('review-side-a');
    expect(screen.queryByTestId('review-reveal')).toBeNull();
    expect((screen.getByTestId('review-note') as HTMLTextAreaElement).value).toBe('fine');
    await fireEvent.keyDown(window, { key: 'r' });
    expect(screen.getByTestId('review-reveal').textContent).toBe('A = Q8, B = B0');
  });

  it('shows a permanent tamper warning listing the chain break and every tampered label', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1)]));
    ipcMock.verifyAudit.mockResolvedValue({
      study_id: 7,
      events: 4,
      intact: false,
      chain_break: { seq: 3, reason: 'hash does not match the content' },
      tampered: ['7:Q8/x-001: database says both_acceptable, chain says candidate_regression', '7:Q8/x-002: not in the chain'],
    });
    setup();
    const banner = await screen.findByTestId('review-tamper');
    expect(banner.textContent).toContain('event 3');
    expect(banner.textContent).toContain('hash does not match the content');
    expect(within(banner).getAllByTestId('review-tamper-line').map((l) => l.textContent)).toEqual([
      '7:Q8/x-001: database says both_acceptable, chain says candidate_regression',
      '7:Q8/x-002: not in the chain',
    ]);
    expect(within(banner).queryByRole('button')).toBeNull();
  });

  it('sends the filters to the backend', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1)]));
    setup();
    await screen.findByTestId('review-side-a');
    await fireEvent.change(screen.getByTestId('review-filter-candidate'), { target: { value: 'Q8' } });
    await fireEvent.change(screen.getByTestId('review-filter-language'), { target: { value: 'de' } });
    await fireEvent.change(screen.getByTestId('review-filter-reason'), { target: { value: 'factor_of_ten' } });
    await fireEvent.change(screen.getByTestId('review-filter-agreeing'), { target: { value: '20' } });
    expect(ipcMock.reviewQueue).toHaveBeenLastCalledWith(7, {
      candidate: 'Q8',
      strata: { language: 'de' },
      reason: 'factor_of_ten',
      agreeing_sample: 20,
    });
  });

  it("filters a team's prompts by their labels, and says a pair it cannot read", async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1)]));
    setup();
    await screen.findByTestId('review-side-a');
    await fireEvent.change(screen.getByTestId('review-filter-labels'), { target: { value: 'language=de, task=invoice' } });
    expect(ipcMock.reviewQueue).toHaveBeenLastCalledWith(7, {
      candidate: null,
      strata: { labels: { language: 'de', task: 'invoice' } },
      reason: null,
      agreeing_sample: 0,
    });
    const calls = ipcMock.reviewQueue.mock.calls.length;
    await fireEvent.change(screen.getByTestId('review-filter-labels'), { target: { value: 'language' } });
    expect(screen.getByTestId('review-filter-labels-error').textContent).toContain('found "language"');
    expect(ipcMock.reviewQueue.mock.calls.length).toBe(calls);
    await fireEvent.change(screen.getByTestId('review-filter-labels'), { target: { value: ' ' } });
    expect(screen.queryByTestId('review-filter-labels-error')).toBeNull();
    expect(ipcMock.reviewQueue).toHaveBeenLastCalledWith(7, { candidate: null, strata: {}, reason: null, agreeing_sample: 0 });
  });

  it('renders only a window of a 100,000-pair queue', async () => {
    const many = Array.from({ length: 100_000 }, (_, i) => pair(i));
    ipcMock.reviewQueue.mockResolvedValue(queue(many));
    setup();
    await screen.findByTestId('review-side-a');
    expect(screen.getAllByTestId('review-pair-row').length).toBeLessThan(40);
  });

  it('says why the item is absent', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1, { item: null, item_note: 'the run recorded no corpus' })]));
    setup();
    expect((await screen.findByTestId('review-item-note')).textContent).toContain('the run recorded no corpus');
    expect(screen.getByTestId('review-diff')).toBeTruthy();
  });

  it("shows a harness item's target and prompt, the needle marked and long stretches folded", async () => {
    const filler = Array.from({ length: 30 }, (_, i) => `Filler sentence ${i}.\n`).join('');
    const prompt = `user:\n${filler}The special magic number is: 3336625.\n${filler}What is the special magic number?`;
    ipcMock.reviewQueue.mockResolvedValue(
      queue([
        pair(1, {
          item: null,
          item_note: "an evaluation harness's item: its prompt and target below are as the harness recorded them",
          harness: { prompt, target: "['3336625']", needles: ['3336625'] },
        }),
      ]),
    );
    setup();
    expect((await screen.findByTestId('review-target')).textContent).toBe("['3336625']");
    expect(screen.getAllByTestId('review-evidence').map((e) => e.textContent)).toEqual(['3336625']);
    expect(screen.getAllByTestId('review-fold').length).toBe(2);
    await fireEvent.click(screen.getByTestId('review-unfold-all'));
    expect(screen.queryAllByTestId('review-fold')).toHaveLength(0);
    expect(screen.getByTestId('review-prompt').textContent).toBe(prompt);
  });

  it("fills the diff's expected column from a harness target that is an approved answer, and only then", async () => {
    const approved = { asset: 'PX-12', revision: 'C', nominal_torque: 12.5, unit: 'N·m' };
    const harness = (expected?: typeof approved) => ({
      item: null,
      item_note: "an evaluation harness's item: its prompt and target below are as the harness recorded them",
      harness: { prompt: 'user:\nPX-12?', target: JSON.stringify(approved), needles: [JSON.stringify(approved)], ...(expected ? { expected } : {}) },
    });
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1, harness(approved)), pair(2, harness())]));
    const { review } = setup();
    await screen.findByTestId('review-target');
    const expectedColumn = () =>
      Object.fromEntries(
        screen.getAllByTestId('review-diff-row').map((r) => [r.dataset['key'], r.querySelectorAll('td')[0]!.textContent?.trim()]),
      );
    expect(expectedColumn()).toEqual({ asset: '"PX-12"', revision: '"C"', nominal_torque: '12.5', unit: '"N·m"' });
    await fireEvent.keyDown(window, { key: 'j' });
    await waitFor(() => expect(review.current?.pair_id.slice(-3)).toBe('002'));
    await waitFor(() => expect(Object.values(expectedColumn()).every((v) => v === 'absent')).toBe(true));
  });

  it("shows a team prompt's labels, check, chat and evidence; a JSON check fills the expected column, a text check does not", async () => {
    const team = (check: NonNullable<Pair['team']>['check'], expected_fields: Record<string, unknown> | null) => ({
      item: null,
      strata: null,
      item_note: "the team's own prompt: its labels, chat and check below are as its corpus holds them",
      team: {
        source_id: 'inv-7',
        labels: { language: 'de', task: 'invoice', context_length: '≤1024' },
        messages: [
          { role: 'system' as const, content: 'Nur aus dem Text antworten.' },
          { role: 'user' as const, content: 'Rechnung F: Summe 1250.50 EUR.\nSumme und Währung als JSON.' },
        ],
        token_count: 1234,
        target: check.kind === 'json_fields' ? 'the JSON object {"currency":"EUR","total":1250.5}' : 'exactly the text "EUR"',
        check,
        evidence: ['Summe 1250.50 EUR'],
        expected_fields,
      },
    });
    const expected = { total: 1250.5, currency: 'EUR' };
    ipcMock.reviewQueue.mockResolvedValue(
      queue([
        pair(1, team({ kind: 'json_fields', expected }, expected)),
        pair(2, team({ kind: 'exact_text', text: 'EUR' }, null)),
      ]),
    );
    const { review } = setup();
    expect((await screen.findByTestId('review-target')).textContent).toBe('the JSON object {"currency":"EUR","total":1250.5}');
    const labels = screen.getByTestId('review-team-labels').textContent ?? '';
    for (const text of ['inv-7', '1,234 prompt tokens', 'language', 'invoice', '≤1024']) expect(labels).toContain(text);
    expect(screen.getAllByTestId('review-evidence').map((e) => e.textContent)).toEqual(['Summe 1250.50 EUR']);
    const expectedColumn = () =>
      Object.fromEntries(
        screen.getAllByTestId('review-diff-row').map((r) => [r.dataset['key'], r.querySelectorAll('td')[0]!.textContent?.trim()]),
      );
    expect(expectedColumn()).toMatchObject({ total: '1250.5', currency: '"EUR"' });
    await fireEvent.keyDown(window, { key: 'j' });
    await waitFor(() => expect(review.current?.pair_id.slice(-3)).toBe('002'));
    await waitFor(() => expect(screen.getByTestId('review-target').textContent).toBe('exactly the text "EUR"'));
    expect(Object.values(expectedColumn()).every((v) => v === 'absent')).toBe(true);
  });

  it('orders and searches the list, the current pair staying current; labelling keeps it current', async () => {
    const en = { language: 'en', length_class: 'short', position: 'begin', task_type: 'literal', answer_kind: 'present' } as const;
    ipcMock.reviewQueue.mockResolvedValue(
      queue([
        pair(1, { label: 'both_acceptable', note: 'fine' }),
        pair(2, { candidate: 'C1', strata: en }),
        pair(3),
      ]),
    );
    ipcMock.labelPair.mockResolvedValue({
      event: { seq: 4, at: '2026-03-03T09:00:00Z', actor: 'Ada', kind: 'label', subject: pair(3).pair_id, payload: {}, previous: null, prev_hash: '0', hash: '1' },
      candidate_is_a: false,
      candidate: 'Q8',
      given: 'b_correct_a_wrong',
      label: 'candidate_regression',
      unblinded: false,
    });
    const { review } = setup();
    await screen.findAllByTestId('review-pair-row');
    const listed = () => screen.getAllByTestId('review-pair-row').map((r) => r.dataset['pairId']!.slice(-3));
    expect(listed()).toEqual(['001', '002', '003']);
    await fireEvent.keyDown(window, { key: 'j' });
    await fireEvent.keyDown(window, { key: 'j' });
    expect(review.current?.pair_id.slice(-3)).toBe('003');

    await fireEvent.change(screen.getByTestId('review-order'), { target: { value: 'unlabelled' } });
    expect(listed()).toEqual(['002', '003', '001']);
    expect(review.current?.pair_id.slice(-3)).toBe('003');
    await fireEvent.change(screen.getByTestId('review-order'), { target: { value: 'candidate' } });
    expect(listed()).toEqual(['002', '001', '003']);

    await fireEvent.input(screen.getByTestId('review-search'), { target: { value: 'literal' } });
    expect(listed()).toEqual(['002']);
    expect(screen.getByTestId('review-search-count').textContent).toBe('1 of 3 shown');
    // The current pair is not listed any more: the first listed one is.
    expect(review.current?.pair_id.slice(-3)).toBe('002');
    await fireEvent.input(screen.getByTestId('review-search'), { target: { value: '' } });
    expect(listed()).toEqual(['002', '001', '003']);
    expect(review.current?.pair_id.slice(-3)).toBe('002');
    // Keys move through what is listed, in its order.
    await fireEvent.keyDown(window, { key: 'j' });
    expect(review.current?.pair_id.slice(-3)).toBe('001');
    await fireEvent.input(screen.getByTestId('review-search'), { target: { value: 'unlabelled' } });
    expect(listed()).toEqual(['002', '003']);
    expect(review.current?.pair_id.slice(-3)).toBe('002');

    await fireEvent.input(screen.getByTestId('review-search'), { target: { value: 'nothing listed' } });
    expect(screen.queryAllByTestId('review-pair-row')).toHaveLength(0);
    expect(screen.getByTestId('review-empty').textContent).toContain('nothing listed');
    await fireEvent.input(screen.getByTestId('review-search'), { target: { value: '' } });

    // Unlabelled first: the pair labelled moves down the list and stays the current one.
    await fireEvent.change(screen.getByTestId('review-order'), { target: { value: 'unlabelled' } });
    review.select(review.pairs.findIndex((p) => p.pair_id.endsWith('003')));
    review.setReviewer('Ada');
    await review.label('b_correct_a_wrong');
    expect(listed()).toEqual(['002', '001', '003']);
    expect(review.current?.pair_id.slice(-3)).toBe('003');
    expect(review.current?.label).toBe('candidate_regression');
  });

  it('reads the shown pair alone, and the next one ahead, so moving on shows it at once', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1), pair(2), pair(3)]));
    setup();
    await screen.findByTestId('review-side-a');
    await waitFor(() => expect(ipcMock.reviewPair).toHaveBeenCalledTimes(2));
    expect(ipcMock.reviewPair.mock.calls.map((c) => c[0])).toEqual([pair(1).pair_id, pair(2).pair_id]);
    await fireEvent.keyDown(window, { key: 'j' });
    // Read ahead: shown without waiting for a read; the one after it is read ahead in turn.
    expect(screen.getByTestId('review-pair').textContent).toContain(pair(2).pair_id);
    await waitFor(() => expect(ipcMock.reviewPair).toHaveBeenCalledTimes(3));
    expect(ipcMock.reviewPair.mock.calls[2]![0]).toBe(pair(3).pair_id);
    // Back: kept, not read again.
    await fireEvent.keyDown(window, { key: 'k' });
    expect(screen.getByTestId('review-pair').textContent).toContain(pair(1).pair_id);
    expect(ipcMock.reviewPair).toHaveBeenCalledTimes(3);
  });

  it('says why a pair could not be read and reads it again on request', async () => {
    ipcMock.reviewQueue.mockResolvedValue(queue([pair(1)]));
    ipcMock.reviewPair.mockRejectedValueOnce({ code: 'storage', message: 'database is locked' });
    setup();
    const error = await screen.findByTestId('review-pair-error');
    expect(error.textContent).toContain('database is locked');
    expect(screen.queryByTestId('review-side-a')).toBeNull();
    await fireEvent.click(within(error).getByRole('button', { name: 'Try again' }));
    await screen.findByTestId('review-side-a');
  });
});
