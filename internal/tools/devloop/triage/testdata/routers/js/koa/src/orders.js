const Router = require('@koa/router');

const router = new Router();

router
  .get('/', (ctx) => { ctx.body = []; })
  .post('/', (ctx) => { ctx.status = 201; ctx.body = { id: '1' }; });

router.get('/:id', (ctx) => { ctx.body = { id: ctx.params.id }; }).put('/:id/status', (ctx) => { ctx.body = {}; });
router.get('/:id/attachments', (ctx) => { ctx.body = []; });
router.get('/:id/items', (ctx) => { ctx.body = []; });

module.exports = router;
