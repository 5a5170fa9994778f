// Lint configuration: typescript-eslint's recommended rules plus the project's conventions
// (type-only imports, no console: everything logs through pino).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "data/", "coverage/", "src/web/**/*.js"] },
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
);
