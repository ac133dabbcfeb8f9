import type { PageOperation } from '../../http/operation.ts';

// The operator console's pages, declared once as the API's routes are: each router registers its
// pages from here (`serve`), so the list cannot name a page no router serves. One address per
// action: GET asks (the confirmation page that works without script), POST does it.

export const consolePageOperations = {
  overview: { method: 'get', path: '/admin', summary: 'The overview: live policy, candidate, fleet, counts and traffic' },
  users: { method: 'get', path: '/admin/users', summary: 'Users, searched by e-mail prefix' },
  askUser: { method: 'get', path: '/admin/users/:id/:action', summary: 'Asks before a user action: ban, unban, role, plan' },
  doUser: { method: 'post', path: '/admin/users/:id/:action', summary: 'Does a user action, then back to the list' },
  audit: { method: 'get', path: '/admin/audit', summary: 'The audit log, filtered by kind, actor, owner and days' },
  keys: { method: 'get', path: '/admin/keys', summary: 'Every key, filtered by owner, state and scope, with 30 days of use' },
  askKey: { method: 'get', path: '/admin/keys/:id/:action', summary: 'Asks before a key action: revoke, disable, enable' },
  keyExpiry: { method: 'post', path: '/admin/keys/:id/expiry', summary: "Sets a key's expiry from its form" },
  doKey: { method: 'post', path: '/admin/keys/:id/:action', summary: 'Does a key action, then back to the list as filtered' },
  policy: { method: 'get', path: '/admin/policy', summary: 'The live policy, its history and changes, the candidate, explain' },
  askPolicy: { method: 'get', path: '/admin/policy/:action', summary: 'Asks before a policy action: promote, drop, rollback-N' },
  doPolicy: { method: 'post', path: '/admin/policy/:action', summary: 'Does a policy action' },
} satisfies Record<string, PageOperation>;

export const webhookPageOperations = {
  list: { method: 'get', path: '/admin/webhooks', summary: 'Webhook endpoints, and the form that adds one' },
  add: { method: 'post', path: '/admin/webhooks', summary: 'Adds an endpoint; its signing secret is shown this once' },
  endpoint: {
    method: 'get', path: '/admin/webhooks/:id',
    summary: "An endpoint's recent deliveries and their attempts; with ?secret=, its new signing secret, once",
  },
  askDisable: { method: 'get', path: '/admin/webhooks/:id/disable', summary: 'Asks before disabling an endpoint' },
  act: { method: 'post', path: '/admin/webhooks/:id/:action', summary: 'Tests, disables or enables an endpoint, or rotates its secret' },
  redeliver: { method: 'post', path: '/admin/webhooks/:id/deliveries/:eventId/redeliver', summary: 'Sends a delivery again' },
} satisfies Record<string, PageOperation>;
