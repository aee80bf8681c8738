// Preloaded into supergateway (`node --import`) by scripts/conformance.sh.
// supergateway 4.0.0 has no host option: express's app.listen(port) binds every interface.
// This binds listeners that name no host to 127.0.0.1 instead, and writes the port actually
// bound (the script passes --port 0) to $CONFORMANCE_PORT_FILE, so no port is guessed.
import net from 'node:net';
import { writeFileSync } from 'node:fs';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    if (typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  } else if (args[0] && typeof args[0] === 'object' && args[0].host === undefined && args[0].path === undefined) {
    args[0] = { ...args[0], host: '127.0.0.1' };
  }
  const file = process.env.CONFORMANCE_PORT_FILE;
  if (file) {
    this.once('listening', () => {
      const a = this.address();
      if (a && typeof a === 'object') writeFileSync(file, `${a.port}\n`);
    });
  }
  return listen.apply(this, args);
};
