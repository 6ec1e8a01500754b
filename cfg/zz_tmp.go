package cfg

func ehframeParse(d []byte, a uint64, o struct{ DataBase uint64 }) ([]struct{ Begin, End uint64 }, error) {
	return nil, nil
}
