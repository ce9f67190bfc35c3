// The page's Debug Adapter Protocol client: the bridge's /dap WebSocket, one message per text
// frame, logged in with the page's cookie (a view token is refused what runs code, as every
// client is). Each request's promise settles with its response's body, or rejects with the
// bridge's message.
'use strict';

class DapSocket {
  constructor(onEvent, onClose) {
    this.onEvent = onEvent;
    this.onClose = onClose;
    this.seq = 1;
    this.pending = new Map();
    this.waiters = [];
    this.socket = null;
  }

  connect() {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const socket = new WebSocket(`${scheme}://${location.host}/dap`);
    this.socket = socket;
    socket.onmessage = (message) => this.receive(message.data);
    socket.onclose = (closed) => {
      const why = closed.reason || 'the bridge closed the connection';
      for (const { reject } of this.pending.values()) reject(new Error(why));
      this.pending.clear();
      if (this.socket === socket) this.onClose(why);
    };
    return new Promise((resolve, reject) => {
      socket.onopen = () => resolve();
      socket.onerror = () => reject(new Error('cannot open a DAP connection to the bridge'));
    });
  }

  receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      return; // the bridge sends JSON only; anything else is not for this page
    }
    if (message.type === 'response') {
      const waiting = this.pending.get(message.request_seq);
      if (!waiting) return;
      this.pending.delete(message.request_seq);
      if (message.success) waiting.resolve(message.body || {});
      else waiting.reject(new Error(message.message || `${message.command} failed`));
    } else if (message.type === 'event') {
      for (const waiter of this.waiters.filter((w) => w.event === message.event)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(message.body || {});
      }
      this.onEvent(message.event, message.body || {});
    } else if (message.type === 'request') { // reverse requests (child sessions): not asked for
      this.send({ type: 'response', request_seq: message.seq, command: message.command,
        success: false, message: 'the web page takes no reverse requests' });
    }
  }

  send(message) {
    this.socket.send(JSON.stringify({ seq: this.seq++, ...message }));
  }

  request(command, args = {}) {
    const seq = this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject });
      this.send({ type: 'request', command, arguments: args });
    });
  }

  nextEvent(event) {
    return new Promise((resolve) => this.waiters.push({ event, resolve }));
  }

  // The handshake an editor does: initialize, attach, then configurationDone once the bridge
  // says it is initialized; the attach response comes last.
  async attach(args) {
    await this.request('initialize', { clientID: 'raydap-page', clientName: 'raydap web page',
      adapterID: 'ray', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path',
      supportsVariableType: true });
    const initialized = this.nextEvent('initialized');
    const attached = this.request('attach', args);
    await Promise.race([initialized, attached]);
    await initialized;
    await this.request('configurationDone');
    return attached;
  }

  close() {
    const socket = this.socket;
    this.socket = null;
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ seq: this.seq++, type: 'request', command: 'disconnect',
        arguments: { terminateDebuggee: false } }));
    }
    if (socket) socket.close();
  }
}
