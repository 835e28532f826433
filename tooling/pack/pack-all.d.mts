/** Directories of the publishable packages. */
export function publishable(): string[];
/** Pack every publishable package into `dest`; npm's JSON report (name, filename, files) per tarball. */
export function packAll(dest: string): { name: string; filename: string; files: { path: string }[] }[];
