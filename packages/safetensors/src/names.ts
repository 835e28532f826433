// The file names of a Hugging Face safetensors checkpoint.

/** File name of a single-file checkpoint. */
export const SINGLE_FILE_NAME = 'model.safetensors';
/** File name of the shard index. */
export const INDEX_FILE_NAME = 'model.safetensors.index.json';
