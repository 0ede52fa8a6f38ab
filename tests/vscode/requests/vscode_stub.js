// The few parts of the `vscode` API that src/tools.ts touches on a failed call, for
// tests/clients/test_vscode_requests.py (the real API is tested in test_vscode_e2e.py).
const tools = {};
class LanguageModelTextPart {
  constructor(value) {
    this.value = value;
  }
}
class LanguageModelToolResult {
  constructor(content) {
    this.content = content;
  }
}
module.exports = {
  tools,
  LanguageModelTextPart,
  LanguageModelToolResult,
  lm: { registerTool: (name, impl) => ((tools[name] = impl), { dispose() {} }) },
  workspace: { getConfiguration: () => ({ get: (_key, fallback) => fallback }) },
};
