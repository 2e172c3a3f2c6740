// Runs dynalite (pinned in package.json, installed by `npm ci`) on loopback, port 0 (the OS
// picks a free one), in memory, tables ACTIVE at once; prints "ready <port>" and stops when
// standard input closes, that is when the process that started it ends.
const dynalite = require('dynalite')

const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(0, '127.0.0.1', () => {
  process.stdout.write('ready ' + server.address().port + '\n')
})
process.stdin.on('end', () => process.exit(0))
process.stdin.resume()
