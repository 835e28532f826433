/** The devices ops run on (the choices of the apps' `--device` flag). */
export const DEVICES = ['cpu', 'webgpu'] as const;

/** A device name. */
export type Device = (typeof DEVICES)[number];
