// A client helper: these calls are requests, not routes.
export async function fetchTodo(api, id) {
  const res = await fetch(`/todos/${id}`);
  return api.request('/todos').then(() => res.json());
}
