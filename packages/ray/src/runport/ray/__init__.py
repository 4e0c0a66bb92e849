"""placeholder during setup"""
