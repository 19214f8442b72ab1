// What a visitor's browser would report as wrong on a page (the browser tests, playwright-core).
import type { Page } from 'playwright-core';

/**
 * Console errors, uncaught script errors and requests that failed on `page` from now on, as
 * readable lines; an empty list is a page a visitor meets no error on. A response the page answers
 * with a status of its own (a sign-in's 401) is the page's answer, not a problem; a subresource that
 * 404s (a favicon nobody declared) logs a console error and counts.
 */
export function browserProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => void (message.type() === 'error' && problems.push(`console: ${message.text()}`)));
  page.on('pageerror', (error) => void problems.push(`script: ${error.message}`));
  page.on('requestfailed', (request) => void problems.push(`failed: ${request.url()} ${request.failure()?.errorText ?? ''}`));
  return problems;
}
