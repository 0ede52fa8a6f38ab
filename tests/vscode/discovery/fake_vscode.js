// Test-only stand-in for the `vscode` module (copied to node_modules/vscode by the test): just what src/server.ts's findServer reads
// (configuration, workspace folders, the Python extension), set from $FAKE_VSCODE (JSON).
const fake = JSON.parse(process.env.FAKE_VSCODE || '{}');
module.exports = {
  workspace: {
    workspaceFolders: fake.folder ? [{ uri: { fsPath: fake.folder } }] : undefined,
    getConfiguration: (section) => ({
      get: (key, fallback) => {
        const value = (fake.config || {})[`${section}.${key}`];
        return value === undefined ? fallback : value;
      },
    }),
  },
  extensions: {
    getExtension: (id) =>
      id === 'ms-python.python' && fake.pythonExtension
        ? { isActive: true, exports: { environments: { getActiveEnvironmentPath: () => ({ path: fake.pythonExtension }) } } }
        : undefined,
  },
};
