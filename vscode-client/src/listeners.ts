// Change listeners for the client's state holders that do not depend on the vscode module (so unit
// tests run them without a host): add one, get a disposable back; fire calls each, a listener that
// removes itself while being called included.

export class Listeners {
  private readonly listeners = new Set<() => void>();

  add(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  fire(): void {
    for (const listener of [...this.listeners]) {
      listener();
    }
  }
}
