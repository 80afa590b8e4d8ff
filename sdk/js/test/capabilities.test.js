// Capability modules (src/capability.js): a toy one from this folder (capabilities/tally.js)
// joins the SDK's through testing/hooks.js, with no edit to the SDK: its Ctx member, its fake in
// LocalHost, its exports from `agl` and its imports in the component's host all work.

import assert from 'node:assert/strict';
import { register } from 'node:module';
import { test } from 'node:test';

// Before the SDK is first imported: `agl:capabilities` then lists capabilities/ too.
register('../testing/hooks.js', import.meta.url, {
  data: { capabilities: [new URL('./capabilities/', import.meta.url).href] },
});
const agl = await import('agl');
const { LocalHost, run } = await import('agl/testing');
const { witHost } = await import('../src/host.js');
const { defineMembers, mergeImports } = await import('../src/capability.js');
const { default: tally, TallyError } = await import('./capabilities/tally.js');

test('a capability module from outside the SDK: its Ctx member and its fake', async () => {
  const host = new LocalHost({ tallies: { seen: 2 } });
  const outcome = await run(
    agl.rollout((task, ctx) => {
      ctx.tally('seen');
      assert.equal(ctx.tally('new', 3), 3);
      assert.throws(() => ctx.tally(5), (err) => err instanceof agl.TallyError && err instanceof agl.AglError);
      ctx.reward('named', 0.5);
      return ctx.tally('seen');
    }),
    {},
    host,
  );
  assert.equal(outcome.error, undefined);
  assert.equal(outcome.reward, 4);
  assert.deepEqual(host.tallies, { seen: 4, new: 3 });
  assert.deepEqual(host.rewards, [['named', 0.5]], 'the SDK capabilities are still there');
  assert.deepEqual(new LocalHost().tallies, {}, 'each LocalHost has its own state');
});

test('its exports are agl\'s and its imports join the component\'s host', () => {
  assert.equal(agl.TallyError, TallyError);
  assert.equal(witHost.tallyAdd, tally.imports.tallyAdd);
  assert.equal(typeof witHost.emit, 'function');
  assert.equal(typeof witHost.chat, 'function');
  assert.ok(!Object.keys(agl.Ctx.prototype).includes('tally'), 'members are not enumerable, as in a class');
});

test('two capabilities may not name a host function or a member alike', () => {
  const a = { imports: { f() {} } };
  assert.throws(() => mergeImports([a, a], (c) => c.imports), /two host functions are called f/);
  assert.throws(() => mergeImports([a], (c) => c.imports, { f() {} }), /two host functions are called f/);
  assert.throws(() => defineMembers(agl.Ctx.prototype, { reward() {} }, 'Ctx'), /Ctx already has a member called reward/);
});
