// The only module that talks to Tauri: every other file imports from here, never from @tauri-apps/*.
import { invoke, type InvokeArgs } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import type { CheckpointComparison } from '$lib/bindings/CheckpointComparison';
import type { CheckpointDigest } from '$lib/bindings/CheckpointDigest';
import type { WeightsProgress } from '$lib/bindings/WeightsProgress';
import type { AppInfo } from '$lib/bindings/AppInfo';
import type { DisjointReport } from '$lib/bindings/DisjointReport';
import type { GenerateFixtures } from '$lib/bindings/GenerateFixtures';
import type { LoadedCorpus } from '$lib/bindings/LoadedCorpus';
import type { ManifestCapacity } from '$lib/bindings/ManifestCapacity';
import type { ManifestCheck } from '$lib/bindings/ManifestCheck';
import type { ManifestDiff } from '$lib/bindings/ManifestDiff';
import type { ManifestVocabulary } from '$lib/bindings/ManifestVocabulary';
import type { NewStudy } from '$lib/bindings/NewStudy';
import type { StoredManifest } from '$lib/bindings/StoredManifest';
import type { Study } from '$lib/bindings/Study';
import { toAppError } from './errors';

export { toAppError } from './errors';

async function call<T>(command: string, args?: InvokeArgs): Promise<T> {
  try {
    return await invoke<T>(command, args);
  } catch (reason) {
    throw toAppError(reason);
  }
}

export const appInfo = (): Promise<AppInfo> => call('app_info');

export const listStudies = (): Promise<Study[]> => call('list_studies');

export const createStudy = (input: NewStudy): Promise<Study> => call('create_study', { input });

/** Also records the study as the last opened one, so the next start reopens it. */
export const openStudy = (id: number): Promise<Study> => call('open_study', { id });

export const lastOpenedStudy = (): Promise<Study | null> => call('last_opened_study');

/** Engines with their KV dtypes, the seed's decision table, and the caveats shown verbatim. */
export const manifestVocabulary = (): Promise<ManifestVocabulary> => call('manifest_vocabulary');

/** Every problem with a manifest text; the digest only when it has none. */
export const validateManifest = (text: string): Promise<ManifestCheck> => call('validate_manifest', { text });

export const listManifests = (studyId: number): Promise<StoredManifest[]> => call('list_manifests', { studyId });

/** Stores the text as the draft of the cell it names (created or replaced). */
export const saveManifestDraft = (studyId: number, text: string): Promise<StoredManifest> =>
  call('save_manifest_draft', { studyId, text });

export const deriveCandidate = (studyId: number, fromCell: string, cell: string): Promise<StoredManifest> =>
  call('derive_candidate', { studyId, fromCell, cell });

/** Refused unless the stored draft still has `expectedDigest`: what was confirmed is what is frozen. */
export const freezeManifest = (studyId: number, cell: string, expectedDigest: string): Promise<StoredManifest> =>
  call('freeze_manifest', { studyId, cell, expectedDigest });

export const deleteManifestDraft = (studyId: number, cell: string): Promise<null> =>
  call('delete_manifest_draft', { studyId, cell });

export const diffManifests = (studyId: number, referenceCell: string, candidateCell: string): Promise<ManifestDiff> =>
  call('diff_manifests', { studyId, referenceCell, candidateCell });

export const manifestCapacity = (studyId: number, cell: string): Promise<ManifestCapacity> =>
  call('manifest_capacity', { studyId, cell });

/** Generates a corpus into a new or empty folder (seconds: every prompt is tokenized); never overwrites one. */
export const generateFixtures = (request: GenerateFixtures): Promise<LoadedCorpus> =>
  call('generate_fixtures', { request });

/** Opens a corpus folder; rejects when items.jsonl does not match the digest in corpus.json. */
export const openCorpus = (dir: string): Promise<LoadedCorpus> => call('open_corpus', { dir });

/** Whether two corpus folders share an item or a protected answer (both digests verified first). */
export const checkCorpora = (a: string, b: string): Promise<DisjointReport> => call('check_corpora', { a, b });

/** Hashes a checkpoint (safetensors directory or file, GGUF file) in place; scale tensors are
 * listed and kept out of the weights digest. Progress arrives through `onWeightsProgress`. */
export const digestWeights = (path: string): Promise<CheckpointDigest> => call('digest_weights', { path });

/** Hashes both checkpoints and lists the weight tensors that differ (name, dtype, shape or bytes). */
export const compareWeights = (base: string, candidate: string): Promise<CheckpointComparison> =>
  call('compare_weights', { base, candidate });

/** Stops the running digest; it then rejects and nothing partial is returned. */
export const cancelWeightsDigest = (): Promise<boolean> => call('cancel_weights_digest');

/** Subscribes to hashing progress; resolves to the function that unsubscribes. */
export function onWeightsProgress(handler: (progress: WeightsProgress) => void): Promise<() => void> {
  return listen<WeightsProgress>('weights-progress', (event) => handler(event.payload));
}
