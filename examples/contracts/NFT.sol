// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

// A minimal ERC-721: mint(to) gives the next id to `to`; mintId reverts for
// an id already minted (tpslab's examples use it as a deliberate revert).
contract NFT {
    string public name = "tpslab NFT";
    string public symbol = "TPSNFT";
    uint256 public nextId = 1;
    mapping(uint256 => address) public ownerOf;
    mapping(address => uint256) public balanceOf;
    mapping(uint256 => address) public getApproved;
    mapping(address => mapping(address => bool)) public isApprovedForAll;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
    event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId);
    event ApprovalForAll(address indexed owner, address indexed operator, bool approved);

    function supportsInterface(bytes4 id) external pure returns (bool) {
        return id == 0x80ac58cd || id == 0x01ffc9a7;
    }

    function mint(address to) external returns (uint256 id) {
        id = nextId++;
        _mint(to, id);
    }

    function mintId(address to, uint256 id) external {
        _mint(to, id);
    }

    function _mint(address to, uint256 id) internal {
        require(to != address(0), "NFT: mint to the zero address");
        require(ownerOf[id] == address(0), "NFT: token already minted");
        ownerOf[id] = to;
        balanceOf[to]++;
        emit Transfer(address(0), to, id);
    }

    function approve(address to, uint256 id) external {
        address owner = ownerOf[id];
        require(msg.sender == owner || isApprovedForAll[owner][msg.sender], "NFT: not the owner");
        getApproved[id] = to;
        emit Approval(owner, to, id);
    }

    function setApprovalForAll(address operator, bool approved) external {
        isApprovedForAll[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function transferFrom(address from, address to, uint256 id) public {
        require(ownerOf[id] == from, "NFT: from is not the owner");
        require(to != address(0), "NFT: transfer to the zero address");
        require(msg.sender == from || getApproved[id] == msg.sender || isApprovedForAll[from][msg.sender], "NFT: not approved");
        balanceOf[from]--;
        balanceOf[to]++;
        ownerOf[id] = to;
        delete getApproved[id];
        emit Transfer(from, to, id);
    }
}
