const solc = require('solc');
const fs = require('fs');
const src = fs.readFileSync(process.argv[2], 'utf8');
const input = {language: 'Solidity', sources: {'Token.sol': {content: src}},
  settings: {optimizer: {enabled: true, runs: 200}, evmVersion: 'paris', outputSelection: {'*': {'*': ['evm.bytecode.object', 'abi']}}}};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
if (out.errors && out.errors.some(e => e.severity === 'error')) { console.error(JSON.stringify(out.errors, null, 1)); process.exit(1); }
const c = out.contracts['Token.sol']['Token'];
fs.writeFileSync(process.argv[3], c.evm.bytecode.object + '\n');
fs.writeFileSync(process.argv[4], JSON.stringify(c.abi) + '\n');
console.log(solc.version());
