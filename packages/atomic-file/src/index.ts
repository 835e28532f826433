// @apertus/atomic-file — the one crash-safe write of the project: files (whole, streamed, or
// async) and directories go to a temporary sibling, are fsynced, renamed into place, and their
// directory is fsynced. Every package that writes a file a reader may see mid-write uses it.

export { writeFileAtomic, writeFileAtomicAsync, renameIntoPlace, tempSibling, type FileContents, type AsyncFileContents, type AtomicWriteOptions } from './write-file';
export { writeDirAtomic } from './write-dir';
export { fsyncDirectory, fsyncTree } from './fsync';
