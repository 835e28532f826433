// @apertus/tokenizer: exact byte-level BPE (Hugging Face tokenizer.json), the Apertus chat
// template, and BPE training in the Apertus layout. This is the Node entry: everything in
// ./browser plus tokenizer files on disk.

export * from './browser.js';
export { loadTokenizer, loadTokenizerFromDirectory, saveTokenizer } from './files.js';
