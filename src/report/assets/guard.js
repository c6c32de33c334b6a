// Loaded first by every dashboard page. Records JavaScript errors, failed script loads, unhandled
// promise rejections, console.error calls and Content-Security-Policy violations on <html>:
// data-js-errors="N" and data-js-error-log="...", so a headless browser's DOM dump shows them.
(function () {
  'use strict';
  var root = document.documentElement;
  var log = [];
  function record(kind, text) {
    log.push(kind + ': ' + text);
    root.setAttribute('data-js-errors', String(log.length));
    root.setAttribute('data-js-error-log', log.join(' | ').slice(0, 4000));
  }
  root.setAttribute('data-js-errors', '0');
  window.addEventListener('error', function (e) {
    var target = e.target && e.target !== window ? (e.target.src || e.target.href || e.target.tagName) : '';
    record('error', e.message ? e.message + ' at ' + e.filename + ':' + e.lineno : 'failed to load ' + target);
  }, true);
  window.addEventListener('unhandledrejection', function (e) { record('rejection', String(e.reason)); });
  document.addEventListener('securitypolicyviolation', function (e) {
    record('csp', e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline'));
  });
  var consoleError = console.error;
  console.error = function () {
    record('console', Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };
  window.H0 = { site: null, runs: {} };
})();
