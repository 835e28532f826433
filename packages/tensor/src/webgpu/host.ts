/** What a host (Node, a browser) provides to start the device thread (`worker.ts`'s `serveDevice`). */

/** What the device thread is started with. */
export interface DeviceThreadInit {
  /** Control words (`CTL` of worker.ts) and the error text buffer, shared with the calling thread. */
  control: SharedArrayBuffer;
  error: SharedArrayBuffer;
  /** Optional features the device may use (intersected with the adapter's). */
  features: string[];
  /** Limits to request below the adapter's. */
  limitCaps: Record<string, number>;
}

/** The started device thread, as the calling thread sees it. */
export interface DeviceThread {
  post(message: unknown, transfer?: ArrayBuffer[]): void;
  onMessage(f: (message: unknown) => void): void;
  terminate(): void;
}

/** Starts a thread that runs `serve` (the source text of `serveDevice`). */
export type StartDeviceThread = (serve: string, init: DeviceThreadInit) => DeviceThread;
