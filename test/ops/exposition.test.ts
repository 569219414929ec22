import { test } from 'node:test';
import assert from 'node:assert/strict';
import { counter, gauge, histogram } from '../../lib/ops/exposition.js';

test('H-5 exposition: a counter renders HELP, TYPE and one line per series, label values escaped', () => {
  const c = counter('x_total', 'Help with \\ and\nnewline.', ['a', 'b']);
  c.inc({ a: 'plain', b: 'q"uote' });
  c.inc({ a: 'plain', b: 'q"uote' }, 2);
  c.inc({ a: 'back\\slash', b: 'new\nline' });
  assert.equal(
    c.render(),
    [
      '# HELP x_total Help with \\\\ and\\nnewline.',
      '# TYPE x_total counter',
      'x_total{a="plain",b="q\\"uote"} 3',
      'x_total{a="back\\\\slash",b="new\\nline"} 1',
      '',
    ].join('\n'),
  );
});

test('H-5 exposition: preset series show 0 before anything happens', () => {
  const c = counter('r_total', 'r', ['kind'], [{ kind: 'a' }, { kind: 'b' }]);
  assert.match(c.render(), /r_total\{kind="a"\} 0\nr_total\{kind="b"\} 0\n$/);
});

test('H-5 exposition: histogram buckets are cumulative, end in +Inf, then _sum and _count', () => {
  const h = histogram('d_seconds', 'd', ['route'], [0.1, 1]);
  for (const v of [0.05, 0.1, 0.5, 3]) h.observe({ route: '/x' }, v);
  assert.equal(
    h.render(),
    [
      '# HELP d_seconds d',
      '# TYPE d_seconds histogram',
      'd_seconds_bucket{route="/x",le="0.1"} 2',
      'd_seconds_bucket{route="/x",le="1"} 3',
      'd_seconds_bucket{route="/x",le="+Inf"} 4',
      'd_seconds_sum{route="/x"} 3.65',
      'd_seconds_count{route="/x"} 4',
      '',
    ].join('\n'),
  );
  const bare = histogram('e_seconds', 'e', [], [1]);
  bare.observe({}, 2);
  assert.match(bare.render(), /e_seconds_bucket\{le="1"\} 0\ne_seconds_bucket\{le="\+Inf"\} 1\ne_seconds_sum 2\ne_seconds_count 1\n$/);
});

test('H-5 exposition: a gauge is read when rendered', () => {
  let n = 1;
  const g = gauge('g', 'g', () => n);
  assert.match(g.render(), /^g 1$/m);
  n = 5;
  assert.match(g.render(), /^g 5$/m);
});

test('H-5 exposition: names are checked when a family is made', () => {
  assert.throws(() => counter('bad-name', 'x', []), TypeError);
  assert.throws(() => counter('ok', 'x', ['bad-label']), TypeError);
  assert.throws(() => counter('ok', 'x', ['__reserved']), TypeError);
  assert.throws(() => histogram('h', 'x', ['le'], [1]), TypeError);
  assert.throws(() => histogram('h', 'x', [], [1, 1]), TypeError);
});
