// The manifest form's layout: the generated JSON Schema decides the fields and their widgets;
// this file only decides the order in which the sections show them.
import schemaJson from '$schemas/manifest.schema.json';
import { fieldsOf, groupFields, type JsonSchema, type Section } from '$lib/schema-form';

export const manifestSchema = schemaJson as unknown as JsonSchema;

const SECTIONS = [
  { title: 'Identity & cell', names: ['cell', 'baseline_id', 'candidate_id', 'label', 'notes'] },
  {
    title: 'Engine & image',
    names: ['engine', 'engine_version', 'image_digest', 'driver_version', 'runtime_version', 'gpu_inventory'],
  },
  {
    title: 'Model & weights',
    names: [
      'model_revision',
      'tokenizer_revision',
      'chat_template_sha256',
      'weights_digest',
      'weight_dtype',
      'quantization_recipe',
      'model_geometry',
    ],
  },
  {
    title: 'Attention & KV',
    names: [
      'attention_backend',
      'kernel_revision',
      'query_attention_precision',
      'kv_dtype',
      'kv_block_size',
      'scale_granularity',
      'scale_source',
      'scales_observed_loaded',
      'scale_artifact_sha256',
      'calibration_corpus_sha256',
      'skipped_layers',
    ],
  },
  {
    title: 'Serving parameters',
    names: [
      'tensor_parallel_size',
      'context_limit',
      'memory_budget',
      'scheduler',
      'prefix_cache',
      'speculative_decoding',
      'effective_args',
    ],
  },
  { title: 'Decoding & stopping', names: ['decoding', 'stopping', 'output_cap'] },
  { title: 'Corpora & evaluator', names: ['evaluation_corpus_sha256', 'trace_sha256', 'evaluator_revision'] },
];

/** Every property of the schema, in sections; a property no section names still shows, under "Other fields". */
export const manifestSections: Section[] = groupFields(fieldsOf(manifestSchema), SECTIONS, 'Other fields');

/** Text fields that take several lines. */
export const MULTILINE_FIELDS = ['notes'];
