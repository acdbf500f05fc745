// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

// A test token anyone may mint, and a Uniswap-V2-style pair of two such
// tokens: constant product, 0.3% fee, the input pulled with transferFrom (so
// one call swaps, after the sender's approve).
contract TestToken {
    string public name;
    string public symbol;
    uint8 public constant decimals = 18;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(string memory name_, string memory symbol_) {
        name = name_;
        symbol = symbol_;
    }

    function mint(address to, uint256 amount) external {
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 a = allowance[from][msg.sender];
        require(a >= amount, "TestToken: allowance too low");
        if (a != type(uint256).max) {
            allowance[from][msg.sender] = a - amount;
        }
        _move(from, to, amount);
        return true;
    }

    function _move(address from, address to, uint256 amount) internal {
        require(balanceOf[from] >= amount, "TestToken: balance too low");
        balanceOf[from] -= amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}

interface IERC20 {
    function balanceOf(address) external view returns (uint256);
    function transfer(address, uint256) external returns (bool);
    function transferFrom(address, address, uint256) external returns (bool);
}

contract Pair {
    IERC20 public immutable token0;
    IERC20 public immutable token1;
    uint112 public reserve0;
    uint112 public reserve1;

    event Swap(address indexed sender, uint256 amountIn, uint256 amountOut, bool zeroForOne, address indexed to);
    event Sync(uint112 reserve0, uint112 reserve1);

    constructor(address a, address b) {
        token0 = IERC20(a);
        token1 = IERC20(b);
    }

    // sync takes the pair's balances as its reserves (after liquidity is
    // minted to it).
    function sync() public {
        reserve0 = uint112(token0.balanceOf(address(this)));
        reserve1 = uint112(token1.balanceOf(address(this)));
        emit Sync(reserve0, reserve1);
    }

    function getAmountOut(uint256 amountIn, uint256 reserveIn, uint256 reserveOut) public pure returns (uint256) {
        require(amountIn > 0, "Pair: insufficient input");
        require(reserveIn > 0 && reserveOut > 0, "Pair: no liquidity");
        uint256 withFee = amountIn * 997;
        return withFee * reserveOut / (reserveIn * 1000 + withFee);
    }

    // swap sells amountIn of token0 for token1 (zeroForOne) or back, paying
    // at least minOut to `to`.
    function swap(uint256 amountIn, bool zeroForOne, uint256 minOut, address to) external returns (uint256 out) {
        (IERC20 tin, IERC20 tout, uint256 rin, uint256 rout) =
            zeroForOne ? (token0, token1, uint256(reserve0), uint256(reserve1)) : (token1, token0, uint256(reserve1), uint256(reserve0));
        out = getAmountOut(amountIn, rin, rout);
        require(out >= minOut, "Pair: output below minOut");
        require(tin.transferFrom(msg.sender, address(this), amountIn), "Pair: input not paid");
        require(tout.transfer(to, out), "Pair: output not paid");
        sync();
        emit Swap(msg.sender, amountIn, out, zeroForOne, to);
    }
}
