// The first steps of a study as the Studies screen lists them: each a link to its screen, in the
// order the backend's next step follows. Wording only; which step is next is the backend's.
import { formatCount } from '$lib/format';
import type { RouteId } from '$lib/router.svelte';
import type { StudyProgress } from '$lib/bindings/StudyProgress';
import type { StudyStep } from '$lib/bindings/StudyStep';

export type StepInfo = { step: StudyStep; title: string; route: RouteId; hint: string };

export const STEPS: readonly StepInfo[] = [
  {
    step: 'manifests',
    title: 'Author B0 and a candidate',
    route: 'manifests',
    hint: 'Write the baseline manifest, derive a candidate (C1, C2, …) from it, and freeze both.',
  },
  {
    step: 'lock_policy',
    title: 'Lock the policy',
    route: 'policy',
    hint: 'Set SLOs, quality floors and margins, and lock them before any result is visible.',
  },
  {
    step: 'run_or_import',
    title: 'Run or import',
    route: 'runs',
    hint: 'Send the paired fixtures to B0 and the candidate, or import what a benchmark tool wrote.',
  },
  {
    step: 'review',
    title: 'Review',
    route: 'review',
    hint: 'Label each paired disagreement, blind to which side is the candidate.',
  },
  {
    step: 'sign_off',
    title: 'Sign',
    route: 'signoff',
    hint: 'Sign the four checks over their evidence and record a decision per candidate.',
  },
  {
    step: 'export',
    title: 'Export',
    route: 'packet',
    hint: 'Export the architecture-review packet and verify it.',
  },
];

export type StepState = 'done' | 'next' | 'later';

/** A step's place against the backend's next step: those before it are done. */
export function stepState(step: StudyStep, next: StudyStep): StepState {
  const at = STEPS.findIndex((s) => s.step === step);
  const nextAt = STEPS.findIndex((s) => s.step === next);
  return at < nextAt ? 'done' : at === nextAt ? 'next' : 'later';
}

function plural(n: number, one: string, many: string): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

/** What the progress says about one step, in words. */
export function stepStatus(step: StudyStep, p: StudyProgress): string {
  switch (step) {
    case 'manifests': {
      const parts = [
        p.baseline_frozen ? 'B0 frozen' : 'B0 not frozen',
        `${plural(p.candidates_frozen, 'candidate', 'candidates')} frozen`,
      ];
      if (p.drafts > 0) parts.push(plural(p.drafts, 'draft', 'drafts'));
      return parts.join(' · ');
    }
    case 'lock_policy':
      return p.policy_version === null ? 'not locked' : `version ${formatCount(p.policy_version)} locked`;
    case 'run_or_import':
      return p.cells_with_runs === 0
        ? 'no run yet'
        : `${plural(p.cells_with_runs, 'cell', 'cells')} with runs${p.baseline_has_runs ? '' : ', none of B0'}`;
    case 'review':
      // Absent until the policy is locked: a disagreement is a result.
      if (p.disagreements === undefined || p.disagreements_labelled === undefined) {
        return 'withheld until the policy is locked';
      }
      return p.disagreements === 0
        ? 'no disagreement to review'
        : `${formatCount(p.disagreements_labelled)} of ${plural(p.disagreements, 'disagreement', 'disagreements')} labelled`;
    case 'sign_off':
      return `${formatCount(p.checks_signed)} of 4 checks signed · ${formatCount(p.candidates_decided)} of ${plural(
        p.candidates_frozen,
        'candidate',
        'candidates',
      )} decided`;
    case 'export':
      return 'the packet, with every file hashed';
  }
}
