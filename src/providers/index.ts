export type { ModelEngine, ModelEvent, ModelRequest, ModelStopReason } from "./engine.js";
export { ScriptedModel } from "./scripted.js";
