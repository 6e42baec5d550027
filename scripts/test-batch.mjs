// Loads the test files it is given into this one process, where node:test runs them all, one file's tests after
// another's: scripts/run-tests.mjs runs unit test files so, which saves a process start per file.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

for (const file of process.argv.slice(2)) await import(pathToFileURL(path.resolve(file)).href);
