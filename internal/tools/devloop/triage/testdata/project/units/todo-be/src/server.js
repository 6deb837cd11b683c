import express from 'express';
import { listTodos, createTodo, getTodo, updateTodo } from './todos.js';

const app = express();
const router = express.Router();
const version = process.env.API_VERSION ?? 'v1';

app.use(express.json());

// app.delete('/todos/:id', removeTodo)  -- disabled until soft delete lands
/*
 * router.get('/legacy/todos', listTodos) was removed in 1.0.
 */
const banner = "app.get('/banner', h) is how routes are declared";
const ratio = total / 2; const re = /app.get('\/regex', h)/g;

app.get('/todos', listTodos);
app.post('/todos', createTodo);
router
  .route('/todos/:id')
  .get(getTodo)
  .put(updateTodo);
app.get('/health', (req, res) => res.json({ ok: true, banner, ratio, re }));
app.get(`/stats/${version}`, (req, res) => res.json({}));

app.use(router);

export default app;
