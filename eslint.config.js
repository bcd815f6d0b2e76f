// Lint for every hand-written file: typescript-eslint's type-aware recommended rules over the TypeScript of
// tsconfig.json (core, generator, specs, runtime, test, bench), plain recommended rules over the JavaScript
// (the dashboard's browser script, this file). generated/ is written by `npm run generate` and checked for drift
// there instead. Run it with `npm run lint`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['generated/**', 'node_modules/**', 'data/**', 'test-output/**', 'bench/results/**'],
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    rules: {
      // The project's convention: a leading underscore marks a parameter or binding kept on purpose (an
      // interface's signature, a destructured field left out of a rest object).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    // The dashboard's progressive enhancement runs in the browser, as a classic script.
    files: ['runtime/dashboard/static/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        window: 'readonly',
        document: 'readonly',
        navigator: 'readonly',
        fetch: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        URL: 'readonly',
        URLSearchParams: 'readonly',
        FormData: 'readonly',
        DOMParser: 'readonly',
        HTMLElement: 'readonly',
        console: 'readonly',
      },
    },
  },
);
