import { describe, expect, it } from 'vitest';
import type { StudyProgress } from '$lib/bindings/StudyProgress';
import { STEPS, stepState, stepStatus } from './steps';

const progress: StudyProgress = {
  study_id: 1,
  baseline_frozen: true,
  candidates_frozen: 1,
  drafts: 2,
  policy_version: 3,
  cells_with_runs: 2,
  baseline_has_runs: true,
  disagreements: 3,
  disagreements_labelled: 1,
  checks_signed: 0,
  candidates_decided: 0,
  next: 'review',
};

describe('first steps', () => {
  it('lists the six steps in the order of the workflow, each with its own screen', () => {
    expect(STEPS.map((s) => s.step)).toEqual(['manifests', 'lock_policy', 'run_or_import', 'review', 'sign_off', 'export']);
    expect(STEPS.map((s) => s.route)).toEqual(['manifests', 'policy', 'runs', 'review', 'signoff', 'packet']);
  });

  it('marks the steps before the backend next step done, that one next, the rest later', () => {
    expect(STEPS.map((s) => stepState(s.step, 'review'))).toEqual(['done', 'done', 'done', 'next', 'later', 'later']);
    expect(stepState('manifests', 'manifests')).toBe('next');
    expect(stepState('export', 'export')).toBe('next');
  });

  it('says each step in words from the counts', () => {
    expect(stepStatus('manifests', progress)).toBe('B0 frozen · 1 candidate frozen · 2 drafts');
    expect(stepStatus('lock_policy', progress)).toBe('version 3 locked');
    expect(stepStatus('lock_policy', { ...progress, policy_version: null })).toBe('not locked');
    expect(stepStatus('run_or_import', progress)).toBe('2 cells with runs');
    expect(stepStatus('run_or_import', { ...progress, cells_with_runs: 1, baseline_has_runs: false })).toBe(
      '1 cell with runs, none of B0',
    );
    expect(stepStatus('review', progress)).toBe('1 of 3 disagreements labelled');
    expect(stepStatus('review', { ...progress, disagreements: 0, disagreements_labelled: 0 })).toBe(
      'no disagreement to review',
    );
    // Before the lock the counts are absent, never 0: the step says they are withheld.
    const beforeLock: StudyProgress = { ...progress, policy_version: null };
    delete beforeLock.disagreements;
    delete beforeLock.disagreements_labelled;
    expect(stepStatus('review', beforeLock)).toBe('withheld until the policy is locked');
    expect(stepStatus('sign_off', progress)).toBe('0 of 4 checks signed · 0 of 1 candidate decided');
  });
});
