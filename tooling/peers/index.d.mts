/** The repository root. */
export declare const repoRoot: string;
/** The venv folder (`<repo>/.peers/venv`). */
export declare const venvDir: string;
/** The pinned requirements file. */
export declare const requirementsFile: string;
/** The pinned `name==version` lines of the requirements. */
export declare function pinned(): string[];
/** The venv's python executable; throws an Error saying how to install it when the venv is missing. */
export declare function peerPython(): string;
