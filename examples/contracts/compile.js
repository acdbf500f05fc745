// node compile.js FILE.sol...: writes CONTRACT.json for each contract, in
// the shape Hardhat and Foundry write (abi, bytecode), with solc's settings
// as internal/targets/evm/erc20's (optimizer 200 runs, EVM paris).
const solc = require('solc');
const fs = require('fs');
const path = require('path');
const sources = {};
for (const f of process.argv.slice(2)) sources[path.basename(f)] = {content: fs.readFileSync(f, 'utf8')};
const input = {language: 'Solidity', sources,
  settings: {optimizer: {enabled: true, runs: 200}, evmVersion: 'paris', outputSelection: {'*': {'*': ['evm.bytecode.object', 'abi']}}}};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
if (out.errors && out.errors.some(e => e.severity === 'error')) { console.error(JSON.stringify(out.errors, null, 1)); process.exit(1); }
for (const file of Object.keys(out.contracts)) {
  for (const [name, c] of Object.entries(out.contracts[file])) {
    if (!c.evm.bytecode.object) continue; // interfaces
    fs.writeFileSync(name + '.json', JSON.stringify({contractName: name, sourceName: file, abi: c.abi, bytecode: '0x' + c.evm.bytecode.object, compiler: 'solc ' + solc.version()}) + '\n');
  }
}
console.log(solc.version());
