const Koa = require('koa');
const Router = require('@koa/router');
const orders = require('./orders');

const app = new Koa();
const root = new Router();
root.get('/health', (ctx) => { ctx.body = { ok: true }; });

const api = new Router({ prefix: '/api/v1' });
api.use('/orders', orders.routes(), orders.allowedMethods());

app.use(root.routes()).use(root.allowedMethods());
app.use(api.routes());
app.use(api.allowedMethods());

app.listen(Number(process.argv[2]), '127.0.0.1');
