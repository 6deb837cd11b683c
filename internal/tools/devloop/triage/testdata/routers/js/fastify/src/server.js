import Fastify from 'fastify';
import api from './api.js';

const app = Fastify();
app.get('/health', async () => ({ ok: true }));
app.register(api, { prefix: '/api' });

await app.listen({ port: Number(process.argv[2]), host: '127.0.0.1' });
