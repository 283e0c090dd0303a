"""The sha256 of every reference data file, written by python -m autograder.generate with data/manifest.json.

The grader checks the data against these too, so the data and its manifest cannot be rewritten together unnoticed."""
FILES = {
    'part_1.1.npz': '58c3ae1744a0e788ac05c0b20f8469d76f162670f819fe6557aa122c9977cfd7',
    'part_1.2.npz': 'b207de1ac1cb558c8248bb2db6da3169bd0a555ab31392941ec7ae793cfe28a0',
    'part_2.1.npz': 'dafcc2e9b37b97aa74b1326679097c571030d601ba7e1b0034cff0be2ef024d2',
    'part_2.2.npz': '2e12072286b875b9a179d068435974586317ba2b321629f8ae4daa4775e6605c',
    'part_3.1.npz': 'da877fb67d49336ee132c70845223e880cdc69923da1f55f7b933e9e87822a21',
    'part_3.2.npz': '890eb64e6ef25a69b78acf43a574189d08b3446ee0523eafaffeccdcb5bfaf55',
    'part_4.1.npz': '1a5053264f550a3d10320428588103b28bddf8031f1c20e4ee48ffaf38ef5451',
    'part_4.2.npz': '6dbdfc85dc2f6da2bfe87460c98c21bf42e3d1860f1f27f284cb7e9e693aa5a0',
    'part_5.1.npz': 'b7e80e4401c237d30c860a1dffa5550be650de3e328a226d300b5431d9f74ad1',
    'part_5.2.npz': '5260bd9e6901bcdfcccbfd0a6c540663278179fe4d0554d6d664e96d7a50bc79',
    'part_6.1.npz': 'e623cea9ade530842d4a97a71501067ac4dd24cd4cc6a098073fad287ee52742',
    'part_6.2.npz': 'aca66538905d7e722094571e4645a0921adf4ff6dbf3917e7fd7f9fedacca690',
    'part_6.3.npz': '920857ee16c3ae1874e09bb0b006c7741826fb22620b03c5cce1d4ea8f8fbf15',
    'part_6.4.npz': '463bf5ed0fc7bfb8f3193f5113452c838030cb25d322bdae0ce7b96f07278133',
    'part_6.5.npz': 'e5b61fc20b686abdf3f5a07c0af29ab0f20c71d0fbeeeddc690f8a83590e94b7',
}
