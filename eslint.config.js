// Lint configuration: typescript-eslint's recommended rules plus the project's conventions
// (type-only imports, no console: everything logs through pino).
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "data/", "coverage/", "test-results/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-console": "error",
    },
  },
  {
    files: ["bench/**/*.ts"],
    rules: { "no-console": "off" },
  },
  {
    // the web page: plain browser modules, served as they are
    files: ["src/web/**/*.js"],
    languageOptions: { sourceType: "module", globals: { ...globals.browser } },
    rules: { "no-console": "off" },
  },
);
