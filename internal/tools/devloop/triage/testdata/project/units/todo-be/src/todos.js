export function createTodo(title) {
  return { id: 1, title, done: false, status: 200 };
}
export function completeTodo(todo) {
  return { ...todo, done: todo.done };
}
