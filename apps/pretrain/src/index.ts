// @apertus/pretrain — the `apertus-pretrain` command line over @apertus/trainer's pretraining
// (runPretraining, runGoldfishExperiment, runAblation); the library entry holds its subcommands.

export { ablateCommand } from './ablate';
