// @apertus/recipes, browser entry (the package's `browser` export): the recipes that run in a tab,
// with nothing from Node — training on a text (the studio's pretraining and fine-tuning). The
// run-directory recipes (pretraining, SFT, alignment, evaluation) are in the Node entry.

export { trainOnText, windowsOf, type TextTraining, type TextTrainee } from './tab/train-on-text';
