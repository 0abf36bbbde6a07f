// The only module that talks to Tauri: every other file imports from here, never from @tauri-apps/*.
import { invoke, type InvokeArgs } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { getCurrentWebview } from '@tauri-apps/api/webview';
import type { ChartFormat } from '$lib/bindings/ChartFormat';
import type { ChartSpec } from '$lib/bindings/ChartSpec';
import type { CheckpointComparison } from '$lib/bindings/CheckpointComparison';
import type { CheckpointDigest } from '$lib/bindings/CheckpointDigest';
import type { WeightsProgress } from '$lib/bindings/WeightsProgress';
import type { AppInfo } from '$lib/bindings/AppInfo';
import type { DisjointReport } from '$lib/bindings/DisjointReport';
import type { EndpointKeyInput } from '$lib/bindings/EndpointKeyInput';
import type { EndpointKeyStatus } from '$lib/bindings/EndpointKeyStatus';
import type { GenerateFixtures } from '$lib/bindings/GenerateFixtures';
import type { ImportEvent } from '$lib/bindings/ImportEvent';
import type { ImportFormat } from '$lib/bindings/ImportFormat';
import type { ImportInput } from '$lib/bindings/ImportInput';
import type { ImportPreview } from '$lib/bindings/ImportPreview';
import type { ImportSummary } from '$lib/bindings/ImportSummary';
import type { ImportFixtures } from '$lib/bindings/ImportFixtures';
import type { LoadedTeamCorpus } from '$lib/bindings/LoadedTeamCorpus';
import type { OpenedCorpus } from '$lib/bindings/OpenedCorpus';
import type { LoadedCorpus } from '$lib/bindings/LoadedCorpus';
import type { AuditEvent } from '$lib/bindings/AuditEvent';
import type { AuditReport } from '$lib/bindings/AuditReport';
import type { Checklist } from '$lib/bindings/Checklist';
import type { DecideInput } from '$lib/bindings/DecideInput';
import type { InterventionInput } from '$lib/bindings/InterventionInput';
import type { LabelInput } from '$lib/bindings/LabelInput';
import type { LabelOutcome } from '$lib/bindings/LabelOutcome';
import type { LoadRunInput } from '$lib/bindings/LoadRunInput';
import type { SweepInput } from '$lib/bindings/SweepInput';
import type { LockedPolicy } from '$lib/bindings/LockedPolicy';
import type { LockPolicyInput } from '$lib/bindings/LockPolicyInput';
import type { LocalServer } from '$lib/bindings/LocalServer';
import type { ManifestCapacity } from '$lib/bindings/ManifestCapacity';
import type { ManifestCheck } from '$lib/bindings/ManifestCheck';
import type { ManifestDiff } from '$lib/bindings/ManifestDiff';
import type { ManifestVocabulary } from '$lib/bindings/ManifestVocabulary';
import type { NewStudy } from '$lib/bindings/NewStudy';
import type { PacketExport } from '$lib/bindings/PacketExport';
import type { PacketExportInput } from '$lib/bindings/PacketExportInput';
import type { PacketVerification } from '$lib/bindings/PacketVerification';
import type { PacketView } from '$lib/bindings/PacketView';
import type { PairsPlan } from '$lib/bindings/PairsPlan';
import type { PathKind } from '$lib/bindings/PathKind';
import type { PolicyProblem } from '$lib/bindings/PolicyProblem';
import type { PolicyStatus } from '$lib/bindings/PolicyStatus';
import type { QualityRunInput } from '$lib/bindings/QualityRunInput';
import type { RecordedRecoveryPlan } from '$lib/bindings/RecordedRecoveryPlan';
import type { RecordRecoveryInput } from '$lib/bindings/RecordRecoveryInput';
import type { RecoveryStatus } from '$lib/bindings/RecoveryStatus';
import type { SignInput } from '$lib/bindings/SignInput';
import type { ReviewFilter } from '$lib/bindings/ReviewFilter';
import type { ReviewQueue } from '$lib/bindings/ReviewQueue';
import type { ReviewIndex } from '$lib/bindings/ReviewIndex';
import type { ReviewIndexColumns } from '$lib/bindings/ReviewIndexColumns';
import type { ReviewRow } from '$lib/bindings/ReviewRow';
import type { ReviewPair } from '$lib/bindings/ReviewPair';
import type { RunDetail } from '$lib/bindings/RunDetail';
import type { RunEvent } from '$lib/bindings/RunEvent';
import type { RunSummary } from '$lib/bindings/RunSummary';
import type { SavedFile } from '$lib/bindings/SavedFile';
import type { StoredManifest } from '$lib/bindings/StoredManifest';
import type { Study } from '$lib/bindings/Study';
import type { StudyAnalysis } from '$lib/bindings/StudyAnalysis';
import type { StudyProgress } from '$lib/bindings/StudyProgress';
import type { StudyResults } from '$lib/bindings/StudyResults';
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

/** Adds the recorded demo study to this database (once; an existing demo is reused) and opens it. */
export const openDemo = (): Promise<Study> => call('open_demo');

/** Where a study stands (manifests, policy, runs, review, sign-off) and its next step; reads only. */
export const studyProgress = (studyId: number): Promise<StudyProgress> => call('study_progress', { studyId });

/** Subscribes to changes of the database file made by anyone (the CLI, another window, this
 * one): checked once a second, reported once per change. Resolves to the function that unsubscribes. */
export function onDatabaseChanged(handler: () => void): Promise<() => void> {
  return listen('db-changed', () => handler());
}

/** Engines with their KV dtypes, the guide's decision table, and the caveats shown verbatim. */
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

/** Opens a corpus folder of either kind (generated, or a team's own prompts), its digest verified. */
export const openAnyCorpus = (dir: string): Promise<OpenedCorpus> => call('open_any_corpus', { dir });

/** Imports a team's own approved prompts (JSONL) into a new or empty folder; a bad line or an overlap with a
 * corpus named in `disjoint_from` is refused whole, nothing written. */
export const importFixtures = (request: ImportFixtures): Promise<LoadedTeamCorpus> => call('import_fixtures', { request });

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

/** Runs a paired-quality pass against one cell's server; resolves only once the run is stored
 * (minutes). Progress arrives through `onRunProgress`; the run is listed from its first report. */
export const runQuality = (input: QualityRunInput): Promise<RunSummary> => call('run_quality', { input });

/** Runs load at an offered rate or a fixed concurrency; resolves once the run is stored. */
export const runLoad = (input: LoadRunInput): Promise<RunSummary> => call('run_load', { input });
export const runSweep = (input: SweepInput): Promise<RunSummary[]> => call('run_sweep', { input });

/** Asks a running run to stop; it is then stored `cancelled`, every planned request accounted for. */
export const cancelRun = (runId: number): Promise<null> => call('cancel_run', { runId });

export const listRuns = (studyId: number): Promise<RunSummary[]> => call('list_runs', { studyId });

/** One run with its requests, verdicts, compatibility check and evidence. */
export const runDetail = (runId: number): Promise<RunDetail> => call('run_detail', { runId });

/** Starts a local llama.cpp server with this KV-cache type and waits until it answers (5–60 s). */
export const startLocalServer = (kv: string): Promise<LocalServer> => call('start_local_server', { kv });

/** Stops a local server this workbench started (SIGTERM, then SIGKILL after 10 s). */
export const stopLocalServer = (pid: number): Promise<null> => call('stop_local_server', { pid });

export const localServers = (): Promise<LocalServer[]> => call('local_servers');

/** Keeps an endpoint's API key under its origin in the OS keyring, or with `session_fallback`, when
 * none answers, in memory until the app closes (the status then carries a `warning`). Rejects
 * (invalid_input) for a bad URL or key, (storage) when no keyring answered and no fallback was
 * asked for. The key never comes back. */
export const setEndpointKey = (input: EndpointKeyInput): Promise<EndpointKeyStatus> => call('set_endpoint_key', { input });

/** Where the key of the endpoint at `url` is kept, if anywhere, and whether the OS keyring answers; never the key. */
export const endpointKeyStatus = (url: string): Promise<EndpointKeyStatus> => call('endpoint_key_status', { url });

/** Removes the endpoint's key from memory and from the OS keyring; resolves to the status after. */
export const forgetEndpointKey = (url: string): Promise<EndpointKeyStatus> => call('forget_endpoint_key', { url });

/** Subscribes to the progress of every running run; resolves to the function that unsubscribes. */
export function onRunProgress(handler: (event: RunEvent) => void): Promise<() => void> {
  return listen<RunEvent>('run-progress', (event) => handler(event.payload));
}

/** A guess of a file's format from its name and first 64 KiB (`null`: nothing matched); rejects
 * when the file cannot be read. The user confirms the format; this only preselects it. */
export const sniffImportFormat = (path: string): Promise<ImportFormat | null> => call('sniff_import_format', { path });

/** Reads and hashes a file and says what it holds; nothing is stored. The reading is kept under
 * `token` for `commitImport`. Progress arrives through `onImportProgress` under `input.job`. */
export const previewImport = (input: ImportInput): Promise<ImportPreview> => call('preview_import', { input });

/** Stores exactly the previewed reading, atomically; the token is used once. Refused (conflict)
 * when the same file is already in the study. */
export const commitImport = (token: string): Promise<ImportSummary> => call('commit_import', { token });

/** Asks a running preview or import to stop; it then rejects with code `cancelled`, nothing stored. */
export const cancelImport = (job: string): Promise<null> => call('cancel_import', { job });

/** Every import of a study, oldest first. */
export const listImports = (studyId: number): Promise<ImportSummary[]> => call('list_imports', { studyId });

/** Subscribes to the progress of every import; resolves to the function that unsubscribes. */
export function onImportProgress(handler: (event: ImportEvent) => void): Promise<() => void> {
  return listen<ImportEvent>('import-progress', (event) => handler(event.payload));
}

/** A file dragged over the window: `paths` are the local paths the OS gave (enter and drop only). */
export type FileDrag = { type: 'enter'; paths: string[] } | { type: 'over' } | { type: 'drop'; paths: string[] } | { type: 'leave' };

/** Subscribes to files dragged onto the window; resolves to the function that unsubscribes. */
export async function onFileDrag(handler: (drag: FileDrag) => void): Promise<() => void> {
  const unlisten = await getCurrentWebview().onDragDropEvent((event) => {
    const p = event.payload;
    if (p.type === 'enter' || p.type === 'drop') handler({ type: p.type, paths: p.paths });
    else handler({ type: p.type });
  });
  return () => void unlisten();
}

/** Every problem of a policy text, each with its JSON path; empty when it may be locked. Stores nothing. */
export const checkPolicy = (policyJson: string): Promise<PolicyProblem[]> => call('check_policy', { policyJson });

/** Locks the study's next policy version (canonical JSON, sha256, time, author); permanent. */
export const lockPolicy = (input: LockPolicyInput): Promise<LockedPolicy> => call('lock_policy', { input });

/** Every locked policy version of a study, the one in force last. */
export const policyStatus = (studyId: number): Promise<PolicyStatus> => call('policy_status', { studyId });

/** The study's analysis under its locked policy; rejects with code `policy_not_locked` until one is locked. */
export const analyzeStudy = (studyId: number): Promise<StudyAnalysis> => call('analyze_study', { studyId });

/** What the Results screen shows: the analysis and every chart drawn from it (standalone SVG text,
 * shown as an image, never inlined); rejects with `policy_not_locked` as `analyzeStudy` does. */
export const studyResults = (studyId: number): Promise<StudyResults> => call('study_results', { studyId });

/** How many paired items a non-inferiority test at this margin needs (McNemar, normal approximation). */
export const planPairs = (margin: number, discordanceRate: number, alpha: number, power: number): Promise<PairsPlan> =>
  call('plan_pairs', { margin, discordanceRate, alpha, power });

/** The study's blind review queue: disagreements per the filter, and on request a sample of
 * agreeing pairs. Sides are "A" and "B"; which one is the candidate is given only once labelled. */
export const reviewQueue = (studyId: number, filter: ReviewFilter): Promise<ReviewQueue> =>
  call('review_queue', { studyId, filter });

/** The study's review list, one row per pair in the blind order, without answers: what the list
 * shows and filters by. The pair the reviewer looks at is read with `reviewPair`. */
export const reviewIndex = async (studyId: number, filter: ReviewFilter): Promise<ReviewIndex> =>
  reviewRows(await call<ReviewIndexColumns>('review_index', { studyId, filter }));

/** The review list as rows again: the backend sends it column by column, each repeated value
 * once (a candidate, a strata object, absent label fields), so 100,000 rows cost a fifth of the
 * bytes and share their strata objects. Nothing is computed: every value is the backend's. */
export function reviewRows(columns: ReviewIndexColumns): ReviewIndex {
  const { candidates, pair_prefixes: prefixes, strata, item_ids: items, candidate, stratum } = columns;
  const rows: ReviewRow[] = new Array(items.length);
  for (let at = 0; at < items.length; at++) {
    const c = candidate[at]!;
    const s = stratum[at];
    rows[at] = {
      pair_id: prefixes[c]! + items[at]!,
      candidate: candidates[c]!,
      item_id: items[at]!,
      strata: s === null || s === undefined ? null : strata[s]!,
      disagreement: true,
      label: null,
      note: null,
      candidate_is_a: null,
      unblinded: false,
    };
  }
  for (const at of columns.agreeing_rows) rows[at]!.disagreement = false;
  for (const l of columns.labels) {
    const row = rows[l.row]!;
    row.label = l.label;
    row.note = l.note;
    row.candidate_is_a = l.candidate_is_a;
    row.unblinded = l.unblinded;
  }
  return {
    study_id: columns.study_id,
    seed: columns.seed,
    rows,
    disagreements: columns.disagreements,
    disagreements_total: columns.disagreements_total,
    labelled: columns.labelled,
  };
}

/** One pair, whole and blind: both answers as "A" and "B", the item or the harness's prompt and
 * target, and its label; which side is the candidate only once labelled. */
export const reviewPair = (pairId: string): Promise<ReviewPair> => call('review_pair', { pairId });

/** Labels (or relabels) a pair, appended to the study's audit chain; resolves to the reveal. */
export const labelPair = (input: LabelInput): Promise<LabelOutcome> => call('label_pair', { input });

/** Verifies the study's audit chain and compares every stored label with what the chain records. */
export const verifyAudit = (studyId: number): Promise<AuditReport> => call('verify_audit', { studyId });

/** The four acceptance checks with their current evidence, its digest and the latest signature
 * (void when the evidence changed since), and the decisions recorded. Rejects with code
 * `policy_not_locked` until a policy is locked. */
export const checklist = (studyId: number): Promise<Checklist> => call('checklist', { studyId });

/** Signs a check over the evidence digest the signer saw; refused (conflict) when the evidence has
 * changed since. Appended to the study's audit chain. */
export const signCheck = (input: SignInput): Promise<AuditEvent> => call('sign_check', { input });

/** Records the decision for a candidate with its rationale; the suggested outcome and the state of
 * the checks are recorded with it. Appended to the study's audit chain. */
export const decide = (input: DecideInput): Promise<AuditEvent> => call('decide', { input });

/** Records a named intervention: who accepts which held-constant findings of a candidate, and why.
 * Appended to the study's audit chain; accepted findings no longer make the comparison uncontrolled. */
export const recordIntervention = (input: InterventionInput): Promise<AuditEvent> =>
  call('record_intervention', { input });

/** Every problem of a recovery plan text, each with its JSON path; empty when it may be recorded. Stores nothing. */
export const checkRecoveryPlan = (planJson: string): Promise<PolicyProblem[]> => call('check_recovery_plan', { planJson });

/** Records the study's next recovery plan version (canonical JSON, sha256, time, author); refused
 * (conflict) when the same plan is recorded again, (invalid_input) with one `- path: …` line per problem. */
export const recordRecoveryPlan = (input: RecordRecoveryInput): Promise<RecordedRecoveryPlan> =>
  call('record_recovery_plan', { input });

/** Every recorded recovery plan version of a study, the one in force last. */
export const recoveryStatus = (studyId: number): Promise<RecoveryStatus> => call('recovery_status', { studyId });

/** Writes the study's architecture-review packet into a new (or empty) folder, or with `zip` a new
 * .zip file; never overwrites (conflict). Rejects with `policy_not_locked` until a policy is locked,
 * (invalid_input) naming representative item ids the study never judged. */
export const exportPacket = (input: PacketExportInput): Promise<PacketExport> => call('export_packet', { input });

/** Rehashes every file of a packet folder or .zip against its index.json; never rejects. */
export const verifyPacket = (target: string): Promise<PacketVerification> => call('verify_packet', { target });

/** Verifies a packet and reads its report.html as stored, for display; never rejects. */
export const openPacket = (target: string): Promise<PacketView> => call('open_packet', { target });

/** Saves one chart of the study where the person chooses in the native save dialog: the SVG the
 * Results screen shows, or that SVG drawn as a PNG by the backend. Resolves to the file written,
 * or null when the dialog was cancelled; rejects (`policy_not_locked`) before any dialog while
 * results are hidden. */
export const exportChart = (studyId: number, spec: ChartSpec, format: ChartFormat): Promise<SavedFile | null> =>
  call('export_chart', { studyId, spec, format });

/** Saves a finished run as its kvgate-run file where the person chooses; null when cancelled. */
export const exportRunFile = (runId: number): Promise<SavedFile | null> => call('export_run_file', { runId });

/** Asks in the native save dialog where the study's packet goes (a new folder, or a .zip file);
 * the path, or null when cancelled. Nothing is written: the export is `exportPacket`'s. Rejects
 * (`policy_not_locked`) before any dialog while the study has no locked policy. */
export const choosePacketOut = (studyId: number, zip: boolean): Promise<string | null> =>
  call('choose_packet_out', { studyId, zip });

/** The native open dialog that fits a path field (a folder or a file, with its filters); the
 * chosen path, or null when cancelled. */
export const choosePath = (kind: PathKind): Promise<string | null> => call('choose_path', { kind });

/** Shows a saved file or folder in the system's file manager. */
export const showInFolder = (path: string): Promise<null> => call('show_in_folder', { path });

/** Opens the report of a verified packet in the system browser; resolves to the file opened.
 * Rejects (conflict) when the packet does not match its index: that report is read in the window only. */
export const openPacketReport = (target: string): Promise<string> => call('open_packet_report', { target });
