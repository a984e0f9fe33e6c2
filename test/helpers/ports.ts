// The port allocator lives beside the unit tests (src/ compiles on its own); test/ uses
// the same one.
export { ephemeralPort, portIn, portRange } from "../../src/ports.test-helper.ts";
