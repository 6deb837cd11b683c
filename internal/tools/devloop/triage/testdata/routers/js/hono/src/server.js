import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import orders from './orders.js';

const app = new Hono();
app.get('/health', (c) => c.json({ ok: true }));

const v1 = new Hono();
v1.route('/orders', orders);
app.route('/api/v1', v1);

serve({ fetch: app.fetch, port: Number(process.argv[2]), hostname: '127.0.0.1' });
