// Lint for every hand-written file: typescript-eslint's type-aware recommended rules over the TypeScript of
// tsconfig.json (core, generator, specs, runtime, test, bench), plain recommended rules over the JavaScript
// (the dashboard's browser script, the build scripts, this file). generated/ is written by `npm run generate`
// and checked for drift there instead; dist/ is the build's output. Run it with `npm run lint`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'generated/**',
      'packages/client/src/generated/**',
      'packages/*/dist/**',
      'dist/**',
      'node_modules/**',
      'data/**',
      'test-output/**',
      'bench/results/**',
    ],
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
      // Passing on a caught value unchanged (a middleware's error, a promise's rejection) is not inventing a
      // non-Error reason: what was thrown stays what callers see.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // The rule's default allow-list (Error, URL, URLSearchParams from the DOM library), plus the same classes as
      // Node declares them (tsconfig has no DOM library): their string form is the one meant, a query string or URL.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        {
          allow: [
            { name: ['Error', 'URL', 'URLSearchParams'], from: 'lib' },
            { name: ['URL', 'URLSearchParams'], from: 'package', package: 'url' },
          ],
        },
      ],
    },
  },
  {
    // Tests read the service's answers (HTTP bodies, JSON-RPC results, rows) as untyped JSON on purpose: they check
    // what was actually sent, not what a type says should be there. So the rules about flowing `any` are off for
    // tests only; production code keeps every rule, and every other rule stays on for tests.
    files: ['test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    // Node scripts (the build, this file).
    files: ['scripts/**/*.mjs', 'eslint.config.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
      },
    },
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
        history: 'readonly',
        HTMLElement: 'readonly',
        console: 'readonly',
      },
    },
  },
);
